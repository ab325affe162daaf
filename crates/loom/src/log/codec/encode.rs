//! The encoder the flusher runs on every sealed chunk (format: `mod.rs`).
//!
//! It was the flusher's hottest code (38 % of an ingest profile), so the
//! work per record is kept to one pass:
//!
//! - one walk over the payload parses each record's header, computes the
//!   time's delta of delta and writes the record's 4-byte lanes straight
//!   into lane-major `u32` columns (a transpose: no per-lane strided pass
//!   over the chunk, no per-lane bounds checks);
//! - each lane chooses raw or delta from a sample of a few short windows
//!   of consecutive values, not from two cost sums over the whole lane;
//! - the chosen transform, the lane's width and its byte planes each take
//!   one pass over the contiguous lane (planes written side by side).
//!
//! The bytes it writes are the format the decoder has always read; only
//! the raw-or-delta choice may differ from the reference encoder's (the
//! sample can disagree with the whole lane), never the meaning.

use super::pack::Packer;
use super::{
    put_planes, width32, zigzag, zigzag32, Codec, KIND_FIXED, KIND_VARIABLE, LANE_DELTA, LANE_RAW,
};
use crate::log::record::{get_varint, put_varint, RecordIter};

/// Consecutive values per sample window of a lane.
const WINDOW: usize = 32;
/// Sample windows per lane, spread evenly over the chunk; lanes of at most
/// `WINDOW * WINDOWS` values are judged whole.
const WINDOWS: usize = 4;

/// Records transposed together (one 64-byte line of `u32` per lane).
const TILE: usize = 16;

/// Reusable buffers of the encoder (one per compressing thread).
pub(crate) struct Encoder {
    packer: Packer,
    /// Zigzagged time deltas of delta, one per record.
    ts: Vec<u64>,
    /// The records' 4-byte lanes, lane-major: lane `k` of record `i` at
    /// `k * stride + i`.
    words: Vec<u32>,
    /// Distance between lanes in `words`: `n` rounded up to an odd multiple
    /// of 16 values. With a stride near a multiple of 4 KiB every lane's
    /// write stream falls in the same L1 set, and 16 of them (64-byte
    /// records) evict each other on every record.
    stride: usize,
    /// One lane's deltas.
    scratch: Vec<u32>,
    /// `TILE` records' lanes, lane-major, on their way to `words`.
    tile: Vec<u32>,
    /// The records' `len % 4` last bytes, byte-major like `words`.
    tail: Vec<u8>,
    /// Records of different lengths: (offset, length) of each.
    spans: Vec<(usize, usize)>,
    values: Vec<u64>,
    cols: Vec<u8>,
}

impl Encoder {
    /// An encoder compressing at zstd `level`; `None` stores payloads as
    /// they are.
    pub(crate) fn new(level: Option<i32>) -> Self {
        Encoder {
            packer: Packer::new(level),
            ts: Vec::new(),
            words: Vec::new(),
            tail: Vec::new(),
            tile: Vec::new(),
            scratch: Vec::new(),
            stride: 0,
            spans: Vec::new(),
            values: Vec::new(),
            cols: Vec::new(),
        }
    }

    /// Appends the body of a chunk with these records to `out`; returns its
    /// codec (the choice is [`Packer::pack`]'s).
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

    /// The columnar transform alone (no zstd), for tests and the encode
    /// benchmark; `None` when the payload does not parse.
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
    /// when the payload does not parse as exactly `count` records.
    fn columns(&mut self, payload: &[u8], first_ts: u64, count: u32) -> bool {
        let n = count as usize;
        self.cols.clear();
        if n == 0 {
            return false;
        }
        match self.transpose(payload, first_ts, n) {
            None => false,
            Some(Some(len)) => {
                self.fixed(n, len);
                true
            }
            Some(None) => self.variable(payload, first_ts, count),
        }
    }

    /// One pass over records assumed to share the first one's length:
    /// times into `ts`, lanes into `words`, tail bytes into `tail`.
    /// `Some(Some(len))` when they all do, `Some(None)` when one differs,
    /// `None` when the payload is not `n` records (cut short, trailing
    /// bytes, a time past `u64::MAX`).
    fn transpose(&mut self, payload: &[u8], first_ts: u64, n: usize) -> Option<Option<usize>> {
        let mut pos = 0usize;
        get_varint(payload, &mut pos)?;
        let len = usize::try_from(get_varint(payload, &mut pos)?).ok()?;
        // More records than bytes cannot parse; this also bounds the
        // buffers below by the payload's size.
        if len > payload.len() || n > payload.len() {
            return None;
        }
        if n.saturating_mul(len) > payload.len() {
            // Not every record can be this long.
            return Some(None);
        }
        let lanes = len / 4;
        let tail = len % 4;
        self.ts.clear();
        self.ts.reserve(n);
        let stride = (n.div_ceil(32) * 32) + 16;
        self.stride = stride;
        // Not cleared, only sized: `rows` writes every value read back
        // (each lane's first `n`), so zeroing a chunk's worth of lanes per
        // chunk (a `memset` as large as the payload) bought nothing.
        self.words.resize(lanes * stride, 0);
        self.tile.clear();
        self.tile.resize(lanes * TILE, 0);
        self.tail.clear();
        self.tail.resize(tail * n, 0);
        // The lane count is fixed per chunk: a loop specialised to it
        // unrolls the per-record scatter (telemetry records are 8–64 bytes).
        match lanes {
            2 => self.rows::<2>(payload, first_ts, n, len),
            4 => self.rows::<4>(payload, first_ts, n, len),
            6 => self.rows::<6>(payload, first_ts, n, len),
            7 => self.rows::<7>(payload, first_ts, n, len),
            8 => self.rows::<8>(payload, first_ts, n, len),
            10 => self.rows::<10>(payload, first_ts, n, len),
            11 => self.rows::<11>(payload, first_ts, n, len),
            16 => self.rows::<16>(payload, first_ts, n, len),
            _ => self.rows::<0>(payload, first_ts, n, len),
        }
    }

    /// [`Encoder::transpose`]'s pass over the records, for `L` lanes per
    /// record (0: any number).
    #[inline(always)]
    fn rows<const L: usize>(
        &mut self,
        payload: &[u8],
        first_ts: u64,
        n: usize,
        len: usize,
    ) -> Option<Option<usize>> {
        let (lanes, stride) = (len / 4, self.stride);
        let (mut pos, mut ts, mut prev_d) = (0usize, first_ts, 0u64);
        for i in 0..n {
            // A busy source's usual header: one-byte delta and length.
            let (d, l) = match payload.get(pos..pos.wrapping_add(2)) {
                Some(&[d, l]) if (d | l) < 0x80 => {
                    pos += 2;
                    (u64::from(d), u64::from(l))
                }
                _ => (varint(payload, &mut pos)?, varint(payload, &mut pos)?),
            };
            if l != len as u64 {
                return Some(None);
            }
            let rec = payload.get(pos..pos.checked_add(len)?)?;
            pos += len;
            ts = ts.checked_add(d)?;
            self.ts.push(zigzag(d.wrapping_sub(prev_d) as i64));
            prev_d = d;
            let (body, rest) = rec.split_at(lanes * 4);
            // Lane k of record i goes to row k of a small tile first (in
            // L1: the record read once, no stride arithmetic), and every
            // TILE records each row moves to its lane as one 64-byte copy,
            // instead of one scattered 4-byte store per lane and record.
            let j = i % TILE;
            match (self.tile.get_mut(..L * TILE), body.get(..L * 4)) {
                (Some(tile), Some(body)) if L > 0 => {
                    for k in 0..L {
                        let s = &body[4 * k..4 * k + 4];
                        tile[k * TILE + j] = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                    }
                }
                _ => {
                    for (row, s) in self.tile.chunks_exact_mut(TILE).zip(body.chunks_exact(4)) {
                        row[j] = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                    }
                }
            }
            if j == TILE - 1 || i + 1 == n {
                // The stride leaves room for a whole tile past `n`.
                let base = i - j;
                for (lane, row) in self
                    .words
                    .chunks_exact_mut(stride)
                    .zip(self.tile.chunks_exact(TILE))
                {
                    if let Some(dst) = lane.get_mut(base..base + TILE) {
                        dst.copy_from_slice(row);
                    }
                }
            }
            let dst = self.tail.get_mut(i..).unwrap_or_default();
            for (b, &s) in dst.iter_mut().step_by(n).zip(rest) {
                *b = s;
            }
        }
        (pos == payload.len()).then_some(Some(len))
    }

    /// The columns of `n` records of `len` bytes from the transposed
    /// buffers.
    fn fixed(&mut self, n: usize, len: usize) {
        self.cols.push(KIND_FIXED);
        put_planes(&mut self.cols, &self.ts);
        let mut b = [0u8; 10];
        let k = put_varint(&mut b, len as u64);
        self.cols.extend_from_slice(&b[..k]);
        for lane in self.words.chunks_exact(self.stride) {
            encode_lane(&mut self.cols, &lane[..n], &mut self.scratch);
        }
        for bytes in self.tail.chunks_exact(n) {
            self.cols.push(LANE_RAW);
            let any = bytes.iter().fold(0u8, |a, &x| a | x);
            self.cols.push(u8::from(any != 0));
            if any != 0 {
                self.cols.extend_from_slice(bytes);
            }
        }
    }

    /// Records of different lengths: times, lengths, then the bytes.
    fn variable(&mut self, payload: &[u8], first_ts: u64, count: u32) -> bool {
        self.spans.clear();
        self.values.clear();
        let (mut prev_ts, mut prev_d, mut end) = (first_ts, 0u64, 0usize);
        for rec in RecordIter::new(payload, first_ts, count) {
            let Ok((ts, bytes)) = rec else { return false };
            let at = bytes.as_ptr() as usize - payload.as_ptr() as usize;
            self.spans.push((at, bytes.len()));
            let d = ts.wrapping_sub(prev_ts);
            self.values.push(zigzag(d.wrapping_sub(prev_d) as i64));
            prev_ts = ts;
            prev_d = d;
            end = at + bytes.len();
        }
        if self.spans.len() != count as usize || end != payload.len() {
            return false;
        }
        self.cols.push(KIND_VARIABLE);
        put_planes(&mut self.cols, &self.values);
        self.values.clear();
        self.values
            .extend(self.spans.iter().map(|&(_, len)| len as u64));
        put_planes(&mut self.cols, &self.values);
        for &(at, len) in &self.spans {
            self.cols.extend_from_slice(&payload[at..at + len]);
        }
        true
    }
}

/// A varint, with the one-byte case (every length and most time deltas of
/// a busy source) inline.
#[inline(always)]
fn varint(p: &[u8], pos: &mut usize) -> Option<u64> {
    match p.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Some(u64::from(b))
        }
        _ => get_varint(p, pos),
    }
}

/// One lane: raw or zigzag deltas (into `scratch`), as the sample says,
/// then its byte planes.
fn encode_lane(cols: &mut Vec<u8>, w: &[u32], scratch: &mut Vec<u32>) {
    let delta = delta_wins(w);
    cols.push(if delta { LANE_DELTA } else { LANE_RAW });
    if !delta {
        let or = w.iter().fold(0, |a, &v| a | v);
        put_planes32(cols, w, width32(or) as usize);
        return;
    }
    scratch.clear();
    scratch.extend(w.first().map(|&v| zigzag32(v)));
    // Each value against its predecessor, both read from `w`: no carried
    // state, so the loop vectorises.
    scratch.extend(
        w.iter()
            .skip(1)
            .zip(w)
            .map(|(&v, &p)| zigzag32(v.wrapping_sub(p))),
    );
    let or = scratch.iter().fold(0, |a, &v| a | v);
    put_planes32(cols, scratch, width32(or) as usize);
}

/// Whether deltas need fewer significant bytes than raw values, judged on
/// the whole lane when it is short, else on `WINDOWS` windows of `WINDOW`
/// consecutive values spread over it (the first value of each window only
/// as the base of its deltas). A lane of telemetry is either smooth
/// (times, counters: deltas win everywhere) or not, so a sample decides as
/// the whole lane would; a wrong choice costs bytes, never correctness.
fn delta_wins(w: &[u32]) -> bool {
    let cost = |s: &[u32]| -> (u64, u64) {
        let raw: u64 = s[1..].iter().map(|&v| width32(v)).sum();
        let delta: u64 = s
            .windows(2)
            .map(|p| width32(zigzag32(p[1].wrapping_sub(p[0]))))
            .sum();
        (raw, delta)
    };
    let n = w.len();
    if n <= WINDOW * WINDOWS {
        let Some(&first) = w.first() else {
            return false;
        };
        let (raw, delta) = cost(w);
        return delta + width32(zigzag32(first)) < raw + width32(first);
    }
    let (mut raw, mut delta) = (0, 0);
    for k in 0..WINDOWS {
        let at = k * (n - WINDOW) / (WINDOWS - 1);
        let (r, d) = cost(&w[at..at + WINDOW]);
        raw += r;
        delta += d;
    }
    delta < raw
}

/// `width` byte planes of `w` (`width u8`, then byte 0 of every value,
/// byte 1, …), written in one pass over the values.
fn put_planes32(out: &mut Vec<u8>, w: &[u32], width: usize) {
    out.push(width as u8);
    let n = w.len();
    let start = out.len();
    out.resize(start + width * n, 0);
    let dst = &mut out[start..];
    match width {
        1 => {
            for (a, &v) in dst.iter_mut().zip(w) {
                *a = v as u8;
            }
        }
        2 => {
            let (p0, p1) = dst.split_at_mut(n);
            for ((a, b), &v) in p0.iter_mut().zip(p1.iter_mut()).zip(w) {
                *a = v as u8;
                *b = (v >> 8) as u8;
            }
        }
        3 => {
            let (p0, rest) = dst.split_at_mut(n);
            let (p1, p2) = rest.split_at_mut(n);
            for (((a, b), c), &v) in p0.iter_mut().zip(p1.iter_mut()).zip(p2.iter_mut()).zip(w) {
                *a = v as u8;
                *b = (v >> 8) as u8;
                *c = (v >> 16) as u8;
            }
        }
        4 => {
            let (p01, p23) = dst.split_at_mut(2 * n);
            let (p0, p1) = p01.split_at_mut(n);
            let (p2, p3) = p23.split_at_mut(n);
            let planes = p0
                .iter_mut()
                .zip(p1.iter_mut())
                .zip(p2.iter_mut())
                .zip(p3.iter_mut());
            for ((((a, b), c), d), &v) in planes.zip(w) {
                *a = v as u8;
                *b = (v >> 8) as u8;
                *c = (v >> 16) as u8;
                *d = (v >> 24) as u8;
            }
        }
        _ => {}
    }
}
