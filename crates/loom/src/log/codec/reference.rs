//! The chunk encoder as it was before issue 21's one-pass transpose: a
//! strided, bounds-checked gather per 4-byte lane, both lane costs summed
//! over every record, byte planes over `u64` values. It writes the same
//! format as [`super::Encoder`]; tests check the two against each other
//! and `make encode-bench` times them side by side.

use super::pack::Packer;
use super::{
    put_planes, width32, zigzag, zigzag32, Codec, KIND_FIXED, KIND_VARIABLE, LANE_DELTA, LANE_RAW,
};
use crate::log::record::{put_varint, RecordIter};

/// The encoder as it was before the one-pass transpose, kept as the
/// reference the new one is tested and benchmarked against.
pub(crate) struct ReferenceEncoder {
    packer: Packer,
    ts: Vec<u64>,
    spans: Vec<(usize, usize)>,
    values: Vec<u64>,
    words: Vec<u32>,
    cols: Vec<u8>,
}

impl ReferenceEncoder {
    /// An encoder compressing at zstd `level`; `None` stores payloads as
    /// they are.
    pub(crate) fn new(level: Option<i32>) -> Self {
        ReferenceEncoder {
            packer: Packer::new(level),
            ts: Vec::new(),
            spans: Vec::new(),
            values: Vec::new(),
            words: Vec::new(),
            cols: Vec::new(),
        }
    }

    /// Appends the body of a chunk with these records to `out`; returns its
    /// codec (the choice is [`Packer::pack`]'s, as for the current encoder).
    pub(crate) fn encode(
        &mut self,
        payload: &[u8],
        first_ts: u64,
        count: u32,
        out: &mut Vec<u8>,
    ) -> Codec {
        let parsed = self.packer.compresses() && self.columns(payload, first_ts, count);
        let cols = parsed.then_some(&self.cols[..]);
        self.packer.pack(payload, cols, out)
    }

    /// The columnar transform alone (no zstd).
    pub(crate) fn columns_only(
        &mut self,
        payload: &[u8],
        first_ts: u64,
        count: u32,
    ) -> Option<&[u8]> {
        self.columns(payload, first_ts, count)
            .then_some(&self.cols[..])
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
    ///
    /// The lane is gathered once into `words`, so the two cost sums run
    /// over a plain `u32` slice (no bounds checks, vectorised): this loop
    /// was the flusher's hottest code. Deltas of 32-bit words zigzag into
    /// 32 bits, the same values as `zigzag` of the sign-extended delta.
    fn lane(&mut self, payload: &[u8], off: usize) {
        self.words.clear();
        self.words.extend(self.spans.iter().map(|&(at, _)| {
            let mut a = [0u8; 4];
            a.copy_from_slice(&payload[at + off..at + off + 4]);
            u32::from_le_bytes(a)
        }));
        let w = &self.words;
        let raw_cost: u64 = w.iter().map(|&v| width32(v)).sum();
        let first = w.first().map_or(0, |&v| width32(zigzag32(v)));
        let delta_cost: u64 = first
            + w.windows(2)
                .map(|p| width32(zigzag32(p[1].wrapping_sub(p[0]))))
                .sum::<u64>();
        let delta = delta_cost < raw_cost;
        self.values.clear();
        if delta {
            let mut prev = 0u32;
            self.values.extend(w.iter().map(|&v| {
                let d = zigzag32(v.wrapping_sub(prev));
                prev = v;
                u64::from(d)
            }));
        } else {
            self.values.extend(w.iter().map(|&v| u64::from(v)));
        }
        self.cols.push(if delta { LANE_DELTA } else { LANE_RAW });
        put_planes(&mut self.cols, &self.values);
    }
}
