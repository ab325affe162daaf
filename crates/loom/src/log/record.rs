//! Compact record encoding inside a chunk's payload.
//!
//! Each record is `varint(ts − previous ts) varint(len) bytes`, where the first
//! record's delta is taken from the chunk's first timestamp. With microsecond
//! timestamps from a busy source the delta is usually 0–127 and the length is
//! below 128, so an 8-byte record costs 10 bytes instead of the 48 of a
//! fixed 40-byte header.

/// Largest encoded size of the two varints in front of a record.
pub(crate) const MAX_RECORD_OVERHEAD: usize = 20;

/// Writes `v` as LEB128 into `out`; returns the bytes written. `out` must hold
/// at least 10 bytes.
#[inline(always)]
pub(crate) fn put_varint(out: &mut [u8], mut v: u64) -> usize {
    if v < 0x80 {
        out[0] = v as u8;
        return 1;
    }
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Reads a LEB128 value; `None` if the input ends or the value overflows.
#[inline(always)]
pub(crate) fn get_varint(input: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = *input.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Encodes one record at the start of `out`; returns bytes written. The caller
/// checked that `out` holds `bytes.len() + MAX_RECORD_OVERHEAD`.
#[inline(always)]
pub(crate) fn encode(out: &mut [u8], ts_delta: u64, bytes: &[u8]) -> usize {
    let mut n = put_varint(out, ts_delta);
    let l = bytes.len();
    n += put_varint(&mut out[n..], l as u64);
    let dst = &mut out[n..n + l];
    // Telemetry records are mostly small: fixed-size overlapping copies
    // compile to a few moves, where a variable-length copy calls memcpy.
    // (Two 16- and 32-byte copies for 17–64-byte records were measured and
    // not kept: engine ingest of 24 B records unchanged, 8 B 11 % slower;
    // docs/chunk-format.md.)
    if (8..=16).contains(&l) {
        dst[..8].copy_from_slice(&bytes[..8]);
        dst[l - 8..].copy_from_slice(&bytes[l - 8..]);
    } else if (4..8).contains(&l) {
        dst[..4].copy_from_slice(&bytes[..4]);
        dst[l - 4..].copy_from_slice(&bytes[l - 4..]);
    } else {
        dst.copy_from_slice(bytes);
    }
    n + l
}

/// Skips one LEB128 value; `None` if the input ends.
#[inline(always)]
fn skip_varint(input: &[u8], pos: &mut usize) -> Option<()> {
    loop {
        let b = *input.get(*pos)?;
        *pos += 1;
        if b < 0x80 {
            return Some(());
        }
    }
}

/// Calls `f(bytes)` for each of `count` records of an encoded payload,
/// without computing timestamps: the indexer's hot loop.
#[inline]
pub(crate) fn for_each_bytes(
    payload: &[u8],
    count: u32,
    mut f: impl FnMut(&[u8]),
) -> Result<(), &'static str> {
    let mut pos = 0usize;
    for _ in 0..count {
        skip_varint(payload, &mut pos).ok_or("truncated timestamp delta")?;
        let len = match payload.get(pos) {
            Some(&b) if b < 0x80 => {
                pos += 1;
                b as usize
            }
            _ => get_varint(payload, &mut pos).ok_or("truncated record length")? as usize,
        };
        let bytes = payload
            .get(pos..pos.wrapping_add(len))
            .ok_or("record length runs past the chunk")?;
        f(bytes);
        pos += len;
    }
    Ok(())
}

/// Iterates `(timestamp, bytes)` over an encoded payload. Stops with an error
/// message on malformed input instead of panicking.
pub(crate) struct RecordIter<'a> {
    payload: &'a [u8],
    pos: usize,
    ts: u64,
    remaining: u32,
}

impl<'a> RecordIter<'a> {
    /// `count` records encoded from `first_ts`.
    pub(crate) fn new(payload: &'a [u8], first_ts: u64, count: u32) -> Self {
        RecordIter {
            payload,
            pos: 0,
            ts: first_ts,
            remaining: count,
        }
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<(u64, &'a [u8]), &'static str>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        // A busy source's usual record: one-byte delta and length. Queries
        // walk edge chunks record by record, so this path is their cost.
        if let Some(&[delta, len]) = self.payload.get(self.pos..self.pos.wrapping_add(2)) {
            if (delta | len) < 0x80 {
                let start = self.pos + 2;
                if let (Some(bytes), Some(ts)) = (
                    self.payload.get(start..start + usize::from(len)),
                    self.ts.checked_add(u64::from(delta)),
                ) {
                    self.ts = ts;
                    self.pos = start + usize::from(len);
                    return Some(Ok((ts, bytes)));
                }
            }
        }
        let delta = match get_varint(self.payload, &mut self.pos) {
            Some(d) => d,
            None => return Some(Err("truncated timestamp delta")),
        };
        let len = match get_varint(self.payload, &mut self.pos) {
            Some(l) => l as usize,
            None => return Some(Err("truncated record length")),
        };
        let end = match self.pos.checked_add(len) {
            Some(e) if e <= self.payload.len() => e,
            _ => return Some(Err("record length runs past the chunk")),
        };
        self.ts = match self.ts.checked_add(delta) {
            Some(t) => t,
            None => return Some(Err("timestamp overflow")),
        };
        let bytes = &self.payload[self.pos..end];
        self.pos = end;
        Some(Ok((self.ts, bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut buf = vec![0u8; 32768];
        let mut n = 0;
        let recs: Vec<(u64, Vec<u8>)> = (0..50u64)
            .map(|i| (1000 + i * i * 37, vec![i as u8; (i * 7 % 300) as usize]))
            .collect();
        let mut prev = recs[0].0;
        for (ts, b) in &recs {
            n += encode(&mut buf[n..], ts - prev, b);
            prev = *ts;
        }
        let got: Vec<(u64, Vec<u8>)> = RecordIter::new(&buf[..n], recs[0].0, recs.len() as u32)
            .map(|r| r.map(|(t, b)| (t, b.to_vec())).unwrap_or((0, vec![])))
            .collect();
        assert_eq!(got, recs);
    }

    /// Every length around the fixed-size copies' bounds, with bytes that
    /// differ by position (constant bytes would hide a misplaced copy).
    #[test]
    fn every_length_round_trips_byte_for_byte() {
        let recs: Vec<Vec<u8>> = (0..=130usize)
            .map(|l| (0..l).map(|k| (k * 31 + l) as u8).collect())
            .collect();
        let mut buf = vec![0u8; 32768];
        let mut n = 0;
        for (i, b) in recs.iter().enumerate() {
            // The writer's contract: room for the record and its overhead.
            assert!(buf.len() - n >= b.len() + MAX_RECORD_OVERHEAD);
            n += encode(&mut buf[n..], i as u64, b);
        }
        let got: Vec<Vec<u8>> = RecordIter::new(&buf[..n], 0, recs.len() as u32)
            .map(|r| r.map(|(_, b)| b.to_vec()).unwrap_or_default())
            .collect();
        assert_eq!(got, recs);
    }

    #[test]
    fn bytes_only_walk_matches_the_iterator() {
        let mut buf = vec![0u8; 4096];
        let mut n = 0;
        for i in 0..40u64 {
            n += encode(&mut buf[n..], i * 1000, &vec![i as u8; (i * 5) as usize]);
        }
        let mut a = Vec::new();
        assert!(for_each_bytes(&buf[..n], 40, |b| a.push(b.to_vec())).is_ok());
        let b: Vec<Vec<u8>> = RecordIter::new(&buf[..n], 0, 40)
            .filter_map(|r| r.ok().map(|(_, b)| b.to_vec()))
            .collect();
        assert_eq!(a, b);
        assert!(for_each_bytes(&buf[..n], 41, |_| {}).is_err());
        assert!(for_each_bytes(&[0x80, 0x80], 1, |_| {}).is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let bad = [0xffu8; 40];
        let mut it = RecordIter::new(&bad, 0, 3);
        assert!(matches!(it.next(), Some(Err(_))));
        let short = [0u8, 200];
        let mut it = RecordIter::new(&short, 0, 1);
        assert!(matches!(it.next(), Some(Err(_))));
        // One-byte delta and length (the fast path) running past the end.
        let cut = [1u8, 5, 9, 9];
        let mut it = RecordIter::new(&cut, 0, 1);
        assert!(matches!(it.next(), Some(Err(_))));
        // A timestamp that would overflow, on the fast path too.
        let mut it = RecordIter::new(&[3u8, 0], u64::MAX - 1, 1);
        assert!(matches!(it.next(), Some(Err(_))));
    }

    #[test]
    fn varint_extremes() {
        let mut buf = [0u8; 10];
        for v in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let n = put_varint(&mut buf, v);
            let mut pos = 0;
            assert_eq!(get_varint(&buf[..n], &mut pos), Some(v));
            assert_eq!(pos, n);
        }
    }
}
