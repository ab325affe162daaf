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
//! When the columns would be larger than the payload (the decoder allocates
//! no more than the payload's size for them) or do not compress, the chunk
//! is zstd over its payload as it is (`Codec::Zstd`), and stored as it is
//! when that does not shrink it either.
//!
//! Decoding checks every length against the chunk header's declared sizes
//! before it allocates, and the caller verifies the rebuilt chunk against
//! its original checksum, so a decoder bug can never return wrong records.

use crate::log::record::{get_varint, put_varint};

#[doc(hidden)]
pub mod bench;
mod encode;
mod pack;
mod reference;

pub(crate) use encode::Encoder;

/// How a frame's body holds the chunk payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// The payload as it is (it did not compress, or compression is off).
    Stored = 0,
    /// zstd over the columnar transform.
    Columns = 1,
    /// zstd over the payload as it is: chunks whose columns would be larger
    /// than their records (records of different lengths whose times need
    /// wider planes than their varints, e.g. OTLP spans) or would not
    /// compress.
    Zstd = 2,
}

impl Codec {
    pub(crate) fn from_byte(b: u8) -> Option<Codec> {
        match b {
            0 => Some(Codec::Stored),
            1 => Some(Codec::Columns),
            2 => Some(Codec::Zstd),
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

/// Zigzag of a 32-bit delta read as `i32` (equal to `zigzag` of it
/// sign-extended, which always fits in 32 bits).
#[inline]
fn zigzag32(d: u32) -> u32 {
    (d << 1) ^ ((d as i32 >> 31) as u32)
}

/// Significant bytes of a `u32` (0 for 0), as `width_of`. Four compares
/// rather than a leading-zero count: baseline x86-64 has no vector `lzcnt`,
/// and compares let the lane cost sums vectorise.
#[inline]
fn width32(v: u32) -> u64 {
    u64::from(v != 0) + u64::from(v > 0xff) + u64::from(v > 0xffff) + u64::from(v > 0xff_ffff)
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
            let cols = decompress(body, payload_len)?;
            rebuild(&cols, payload_len, count)
        }
        Codec::Zstd => {
            let payload = decompress(body, payload_len)?;
            if payload.len() != payload_len {
                return Err(format!(
                    "zstd body of {} bytes, header says {payload_len}",
                    payload.len()
                ));
            }
            Ok(payload)
        }
    }
}

thread_local! {
    /// One zstd decompression context per reading thread: making one per
    /// chunk (allocating and clearing its tables) took a tenth of a
    /// no-index scan's time.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// zstd `body` into at most `capacity` bytes, through this thread's context.
fn decompress(body: &[u8], capacity: usize) -> Result<Vec<u8>, String> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell
            .try_borrow_mut()
            .map_err(|_| "zstd context in use".to_string())?;
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?);
        }
        match slot.as_mut() {
            Some(d) => d
                .decompress(body, capacity)
                .map_err(|e| format!("zstd: {e}")),
            None => Err("no zstd context".into()),
        }
    })
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
        KIND_FIXED => rebuild_fixed(&mut c, cols, &deltas, payload_len, &mut out)?,
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

/// The records of a chunk of fixed-size records: each record's header
/// (time delta and length varints) goes out first at its place, then the
/// lanes fill the records' bytes in place (no second copy).
fn rebuild_fixed(
    c: &mut Columns<'_>,
    cols: &[u8],
    deltas: &[u64],
    payload_len: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let n = deltas.len();
    let mut head = [0u8; 20];
    let mut p = c.pos;
    let len = get_varint(cols, &mut p).ok_or("bad record length")? as usize;
    c.pos = p;
    let total = len.checked_mul(n).filter(|&t| t <= payload_len);
    total.ok_or_else(|| format!("{n} records of {len} bytes exceed the chunk"))?;
    out.resize(payload_len, 0);
    let mut starts = Vec::with_capacity(n);
    let mut pos = 0usize;
    for &d in deltas {
        // Straight into the output while a header's most (two
        // varints of 10 bytes) fits; through `head` near the end.
        let k = if let Some(room) = out.get_mut(pos..pos + 20) {
            let k = put_varint(room, d);
            k + put_varint(&mut room[k..], len as u64)
        } else {
            let k = put_varint(&mut head, d);
            let k = k + put_varint(&mut head[k..], len as u64);
            let to = out
                .get_mut(pos..pos + k)
                .ok_or_else(|| format!("records rebuild past the declared {payload_len} bytes"))?;
            to.copy_from_slice(&head[..k]);
            k
        };
        let end = pos + k + len;
        if end > payload_len {
            return Err(format!(
                "records rebuild past the declared {payload_len} bytes"
            ));
        }
        starts.push(pos + k);
        pos = end;
    }
    out.truncate(pos);
    let mut values = Vec::new();
    for lane in 0..len / 4 {
        let mode = c.byte()?;
        c.planes(n, 4, &mut values)?;
        let mut put = |i: usize, w: u32| {
            let at = starts[i] + lane * 4;
            out[at..at + 4].copy_from_slice(&w.to_le_bytes());
        };
        match mode {
            LANE_RAW => {
                for (i, &v) in values.iter().enumerate() {
                    put(i, v as u32);
                }
            }
            LANE_DELTA => {
                let mut prev = 0u32;
                for (i, &v) in values.iter().enumerate() {
                    prev = prev.wrapping_add(unzigzag(v) as i32 as u32);
                    put(i, prev);
                }
            }
            m => return Err(format!("unknown lane mode {m}")),
        }
    }
    for off in (len / 4) * 4..len {
        if c.byte()? != LANE_RAW {
            return Err("a tail byte lane is not raw".into());
        }
        c.planes(n, 1, &mut values)?;
        for (i, &v) in values.iter().enumerate() {
            out[starts[i] + off] = v as u8;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
