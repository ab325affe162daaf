//! Chunk compression: the columnar transform plus zstd that sealed chunks
//! are stored with on disk (see `docs/chunk-format.md` for the measurements
//! behind the choice).
//!
//! A chunk's payload (`varint(ts delta) varint(len) bytes` per record, see
//! `record.rs`) is turned into columns, then zstd-compressed:
//!
//! - `kind u8`: `1` when every record has the same length, `2` otherwise;
//! - timestamps: delta-of-delta (the first delta taken from the chunk's
//!   first timestamp), zigzag, as byte planes;
//! - kind 1: `varint len`, then the record bytes cut into 4-byte
//!   little-endian lanes (a `u64` field is two lanes, a `u8`/`u16` field
//!   shares one), each lane stored raw or as zigzag deltas of consecutive
//!   records (whichever needs fewer significant bytes), as byte planes;
//!   the `len % 4` last bytes of each record are one plane each;
//! - kind 2: lengths as byte planes, then every record's bytes in order.
//!
//! Byte planes: `width u8` (significant bytes of the largest value), then
//! for each byte `b < width` that byte of every value. Small and repetitive
//! values become long runs that zstd squeezes to almost nothing; no schema
//! is needed, so any chunk (string fields, odd layouts) encodes exactly.
//!
//! Decoding checks every length against the chunk header's declared sizes
//! before it allocates, and the caller verifies the rebuilt chunk against
//! its original checksum, so a decoder bug can never return wrong records.

use crate::log::record::{get_varint, put_varint, RecordIter};

/// How a frame's body holds the chunk payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// The payload as it is (it did not compress, or compression is off).
    Stored = 0,
    /// zstd over the columnar transform.
    Columns = 1,
}

impl Codec {
    pub(crate) fn from_byte(b: u8) -> Option<Codec> {
        match b {
            0 => Some(Codec::Stored),
            1 => Some(Codec::Columns),
            _ => None,
        }
    }
}

const KIND_FIXED: u8 = 1;
const KIND_VARIABLE: u8 = 2;
const LANE_RAW: u8 = 0;
const LANE_DELTA: u8 = 1;

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Significant bytes of `v` (0 for 0).
#[inline]
fn width_of(v: u64) -> u8 {
    ((64 - v.leading_zeros()).div_ceil(8)) as u8
}

fn put_planes(out: &mut Vec<u8>, values: &[u64]) {
    let width = width_of(values.iter().fold(0, |a, &v| a | v));
    out.push(width);
    for b in 0..width {
        let shift = 8 * u32::from(b);
        out.extend(values.iter().map(|&v| (v >> shift) as u8));
    }
}

/// Reusable buffers of the encoder (one per compressing thread).
pub(crate) struct Encoder {
    zstd: Option<zstd::bulk::Compressor<'static>>,
    ts: Vec<u64>,
    spans: Vec<(usize, usize)>,
    values: Vec<u64>,
    cols: Vec<u8>,
}

impl Encoder {
    /// An encoder compressing at zstd `level`; `None` stores payloads as
    /// they are.
    pub(crate) fn new(level: Option<i32>) -> Self {
        let zstd = level.and_then(|l| match zstd::bulk::Compressor::new(l) {
            Ok(c) => Some(c),
            Err(e) => {
                log::error!("zstd level {l} unavailable ({e}); chunks are stored uncompressed");
                None
            }
        });
        Encoder {
            zstd,
            ts: Vec::new(),
            spans: Vec::new(),
            values: Vec::new(),
            cols: Vec::new(),
        }
    }

    /// Appends the body of a chunk with these records to `out`; returns its
    /// codec. Falls back to [`Codec::Stored`] when the payload does not
    /// parse, or when compressing would not make it smaller.
    pub(crate) fn encode(
        &mut self,
        payload: &[u8],
        first_ts: u64,
        count: u32,
        out: &mut Vec<u8>,
    ) -> Codec {
        let stored = |out: &mut Vec<u8>| {
            out.extend_from_slice(payload);
            Codec::Stored
        };
        if self.zstd.is_none() || !self.columns(payload, first_ts, count) {
            return stored(out);
        }
        if self.cols.len() > payload.len() {
            return stored(out);
        }
        let start = out.len();
        // The body may not be larger than the payload: then storing wins.
        out.resize(start + payload.len(), 0);
        let Some(z) = self.zstd.as_mut() else {
            out.truncate(start);
            return stored(out);
        };
        match z.compress_to_buffer(&self.cols, &mut out[start..]) {
            Ok(n) if n < payload.len() => {
                out.truncate(start + n);
                Codec::Columns
            }
            _ => {
                out.truncate(start);
                stored(out)
            }
        }
    }

    /// Builds the columnar transform of the payload in `self.cols`; false
    /// when the payload does not parse as `count` records.
    fn columns(&mut self, payload: &[u8], first_ts: u64, count: u32) -> bool {
        self.ts.clear();
        self.spans.clear();
        for rec in RecordIter::new(payload, first_ts, count) {
            let Ok((ts, bytes)) = rec else { return false };
            let at = bytes.as_ptr() as usize - payload.as_ptr() as usize;
            self.ts.push(ts);
            self.spans.push((at, bytes.len()));
        }
        if self.ts.len() != count as usize {
            return false;
        }
        self.cols.clear();
        let fixed = self.spans.windows(2).all(|w| w[0].1 == w[1].1);
        self.cols
            .push(if fixed { KIND_FIXED } else { KIND_VARIABLE });
        // Delta of delta of the timestamps.
        self.values.clear();
        let (mut prev_ts, mut prev_d) = (first_ts, 0u64);
        for &t in &self.ts {
            let d = t.wrapping_sub(prev_ts);
            self.values.push(zigzag(d.wrapping_sub(prev_d) as i64));
            prev_ts = t;
            prev_d = d;
        }
        put_planes(&mut self.cols, &self.values);
        if fixed {
            let len = self.spans.first().map_or(0, |s| s.1);
            let mut b = [0u8; 10];
            let n = put_varint(&mut b, len as u64);
            self.cols.extend_from_slice(&b[..n]);
            for lane in 0..len / 4 {
                self.lane(payload, lane * 4);
            }
            for off in (len / 4) * 4..len {
                self.values.clear();
                self.values.extend(
                    self.spans
                        .iter()
                        .map(|&(at, _)| u64::from(payload[at + off])),
                );
                self.cols.push(LANE_RAW);
                put_planes(&mut self.cols, &self.values);
            }
        } else {
            self.values.clear();
            self.values
                .extend(self.spans.iter().map(|&(_, len)| len as u64));
            put_planes(&mut self.cols, &self.values);
            for &(at, len) in &self.spans {
                self.cols.extend_from_slice(&payload[at..at + len]);
            }
        }
        true
    }

    /// One 4-byte lane at `off` of every record: raw or as deltas, whichever
    /// needs fewer significant bytes in all.
    fn lane(&mut self, payload: &[u8], off: usize) {
        let word = |at: usize| {
            let mut a = [0u8; 4];
            a.copy_from_slice(&payload[at + off..at + off + 4]);
            u32::from_le_bytes(a)
        };
        let (mut raw_cost, mut delta_cost, mut prev) = (0u64, 0u64, 0u32);
        for &(at, _) in &self.spans {
            let v = word(at);
            raw_cost += u64::from(width_of(u64::from(v)));
            delta_cost += u64::from(width_of(zigzag(i64::from(v.wrapping_sub(prev) as i32))));
            prev = v;
        }
        let delta = delta_cost < raw_cost;
        self.values.clear();
        let mut prev = 0u32;
        for &(at, _) in &self.spans {
            let v = word(at);
            self.values.push(if delta {
                zigzag(i64::from(v.wrapping_sub(prev) as i32))
            } else {
                u64::from(v)
            });
            prev = v;
        }
        self.cols.push(if delta { LANE_DELTA } else { LANE_RAW });
        put_planes(&mut self.cols, &self.values);
    }
}

/// Reads columns, every read bounds-checked.
struct Columns<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Columns<'a> {
    fn byte(&mut self) -> Result<u8, String> {
        let v = *self.b.get(self.pos).ok_or("columns end early")?;
        self.pos += 1;
        Ok(v)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).ok_or("column size overflows")?;
        let s = self
            .b
            .get(self.pos..end)
            .ok_or("a column runs past the end")?;
        self.pos = end;
        Ok(s)
    }

    /// `n` values of byte planes no wider than `max_width`, into `out`.
    fn planes(&mut self, n: usize, max_width: u8, out: &mut Vec<u64>) -> Result<(), String> {
        let width = self.byte()?;
        if width > max_width {
            return Err(format!("plane width {width} above {max_width}"));
        }
        out.clear();
        out.resize(n, 0);
        for b in 0..width {
            let plane = self.take(n)?;
            let shift = 8 * u32::from(b);
            for (v, &x) in out.iter_mut().zip(plane) {
                *v |= u64::from(x) << shift;
            }
        }
        Ok(())
    }
}

/// Rebuilds the payload of a chunk from a frame body. `payload_len` and
/// `count` come from the frame header; nothing larger than
/// `payload_len` (plus one column buffer of that size) is allocated, and a
/// body that does not rebuild exactly `payload_len` bytes is an error.
pub(crate) fn decode(
    codec: Codec,
    body: &[u8],
    payload_len: usize,
    count: u32,
) -> Result<Vec<u8>, String> {
    match codec {
        Codec::Stored => {
            if body.len() != payload_len {
                return Err(format!(
                    "stored body of {} bytes, header says {payload_len}",
                    body.len()
                ));
            }
            Ok(body.to_vec())
        }
        Codec::Columns => {
            let cols =
                zstd::bulk::decompress(body, payload_len).map_err(|e| format!("zstd: {e}"))?;
            rebuild(&cols, payload_len, count)
        }
    }
}

fn rebuild(cols: &[u8], payload_len: usize, count: u32) -> Result<Vec<u8>, String> {
    let n = count as usize;
    // Every record takes at least two bytes of payload.
    if n == 0 || n.saturating_mul(2) > payload_len {
        return Err(format!("{n} records cannot fill {payload_len} bytes"));
    }
    let mut c = Columns { b: cols, pos: 0 };
    let kind = c.byte()?;
    let mut deltas = Vec::new();
    c.planes(n, 8, &mut deltas)?;
    let mut prev_d = 0u64;
    for d in deltas.iter_mut() {
        *d = prev_d.wrapping_add(unzigzag(*d) as u64);
        prev_d = *d;
    }
    let mut out = Vec::with_capacity(payload_len);
    let mut head = [0u8; 20];
    let mut emit = |out: &mut Vec<u8>, d: u64, rec: &[u8]| -> Result<(), String> {
        let k = put_varint(&mut head, d);
        let k = k + put_varint(&mut head[k..], rec.len() as u64);
        if out.len() + k + rec.len() > payload_len {
            return Err(format!(
                "records rebuild past the declared {payload_len} bytes"
            ));
        }
        out.extend_from_slice(&head[..k]);
        out.extend_from_slice(rec);
        Ok(())
    };
    match kind {
        KIND_FIXED => {
            let mut p = c.pos;
            let len = get_varint(cols, &mut p).ok_or("bad record length")? as usize;
            c.pos = p;
            let total = len.checked_mul(n).filter(|&t| t <= payload_len);
            let total =
                total.ok_or_else(|| format!("{n} records of {len} bytes exceed the chunk"))?;
            let mut recs = vec![0u8; total];
            let mut values = Vec::new();
            for lane in 0..len / 4 {
                let mode = c.byte()?;
                c.planes(n, 4, &mut values)?;
                let mut prev = 0u32;
                for (i, &v) in values.iter().enumerate() {
                    let w = match mode {
                        LANE_RAW => v as u32,
                        LANE_DELTA => prev.wrapping_add(unzigzag(v) as i32 as u32),
                        m => return Err(format!("unknown lane mode {m}")),
                    };
                    prev = w;
                    let at = i * len + lane * 4;
                    recs[at..at + 4].copy_from_slice(&w.to_le_bytes());
                }
            }
            for off in (len / 4) * 4..len {
                if c.byte()? != LANE_RAW {
                    return Err("a tail byte lane is not raw".into());
                }
                c.planes(n, 1, &mut values)?;
                for (i, &v) in values.iter().enumerate() {
                    recs[i * len + off] = v as u8;
                }
            }
            for (i, &d) in deltas.iter().enumerate() {
                emit(&mut out, d, &recs[i * len..(i + 1) * len])?;
            }
        }
        KIND_VARIABLE => {
            let mut lens = Vec::new();
            c.planes(n, 4, &mut lens)?;
            for (&d, &len) in deltas.iter().zip(&lens) {
                let rec = c.take(len as usize)?;
                emit(&mut out, d, rec)?;
            }
        }
        k => return Err(format!("unknown column kind {k}")),
    }
    if c.pos != cols.len() {
        return Err("columns have trailing bytes".into());
    }
    if out.len() != payload_len {
        return Err(format!(
            "records rebuild {} bytes, the header says {payload_len}",
            out.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::encode;

    fn payload(recs: &[(u64, Vec<u8>)]) -> (Vec<u8>, u64) {
        let first = recs.first().map_or(0, |r| r.0);
        let mut out = vec![0u8; recs.iter().map(|r| r.1.len() + 20).sum()];
        let (mut n, mut prev) = (0, first);
        for (t, b) in recs {
            n += encode(&mut out[n..], t - prev, b);
            prev = *t;
        }
        out.truncate(n);
        (out, first)
    }

    fn round_trip(recs: &[(u64, Vec<u8>)]) -> (Codec, usize) {
        let (p, first) = payload(recs);
        let mut enc = Encoder::new(Some(3));
        let mut body = Vec::new();
        let codec = enc.encode(&p, first, recs.len() as u32, &mut body);
        let back = decode(codec, &body, p.len(), recs.len() as u32);
        assert_eq!(back.as_deref(), Ok(&p[..]), "{codec:?}");
        (codec, body.len())
    }

    #[test]
    fn regular_telemetry_compresses_and_round_trips() {
        let recs: Vec<(u64, Vec<u8>)> = (0..2000u64)
            .map(|i| {
                let mut b = Vec::new();
                b.extend_from_slice(&(1000 + (i % 4) as u32).to_le_bytes());
                b.extend_from_slice(&[0, 0, 0, 0]);
                b.extend_from_slice(&(1_700_000_000_000_000 + i * 3).to_le_bytes());
                b.extend_from_slice(&(i * 7919 % 200).to_le_bytes());
                (1_700_000_000_000_000 + i * 3 + i % 2, b)
            })
            .collect();
        let (codec, size) = round_trip(&recs);
        assert_eq!(codec, Codec::Columns);
        assert!(size < 2000 * 3, "{size} bytes for 2000 records");
    }

    #[test]
    fn odd_shapes_round_trip() {
        round_trip(&[(5, vec![])]);
        round_trip(&[(5, vec![1, 2, 3])]);
        round_trip(
            &(0..300)
                .map(|i| (7, vec![9u8; 13 + i % 3]))
                .collect::<Vec<_>>(),
        );
        round_trip(
            &(0..300)
                .map(|i| (i * 1_000_000_007, vec![0xff; 5]))
                .collect::<Vec<_>>(),
        );
        round_trip(
            &(0..300)
                .map(|i| (u64::MAX - 300 + i, vec![]))
                .collect::<Vec<_>>(),
        );
    }

    #[test]
    fn garbage_bodies_are_errors_not_panics() {
        let recs: Vec<(u64, Vec<u8>)> = (0..50).map(|i| (i, vec![i as u8; 9])).collect();
        let (p, first) = payload(&recs);
        let mut body = Vec::new();
        let codec = Encoder::new(Some(1)).encode(&p, first, 50, &mut body);
        assert_eq!(codec, Codec::Columns);
        for i in 0..body.len() {
            let mut b = body.clone();
            b[i] ^= 0x41;
            if let Ok(out) = decode(codec, &b, p.len(), 50) {
                assert_eq!(out.len(), p.len());
            }
        }
        assert!(decode(codec, &body, p.len() - 1, 50).is_err());
        assert!(decode(codec, &body, p.len(), 51).is_err());
    }
}
