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

    /// Calls `put(i, value)` for each of the `n` values of one column of
    /// byte planes no wider than `max_width`: the planes are read where they
    /// lie, one pass per column, with no buffer of values between.
    #[inline(always)]
    fn each_value(
        &mut self,
        n: usize,
        max_width: u8,
        mut put: impl FnMut(usize, u64),
    ) -> Result<(), String> {
        let width = self.byte()?;
        if width > max_width {
            return Err(format!("plane width {width} above {max_width}"));
        }
        let size = n
            .checked_mul(usize::from(width))
            .ok_or("column size overflows")?;
        let planes = self.take(size)?;
        if n == 0 {
            return Ok(());
        }
        let p = |b: usize| &planes[b * n..(b + 1) * n];
        match width {
            0 => (0..n).for_each(|i| put(i, 0)),
            1 => {
                for (i, &a) in p(0).iter().enumerate() {
                    put(i, u64::from(a));
                }
            }
            2 => {
                for (i, (&a, &b)) in p(0).iter().zip(p(1)).enumerate() {
                    put(i, u64::from(a) | u64::from(b) << 8);
                }
            }
            3 => {
                for (i, ((&a, &b), &c)) in p(0).iter().zip(p(1)).zip(p(2)).enumerate() {
                    put(i, u64::from(a) | u64::from(b) << 8 | u64::from(c) << 16);
                }
            }
            4 => {
                let planes = p(0).iter().zip(p(1)).zip(p(2)).zip(p(3));
                for (i, (((&a, &b), &c), &d)) in planes.enumerate() {
                    let v = u32::from_le_bytes([a, b, c, d]);
                    put(i, u64::from(v));
                }
            }
            _ => {
                for i in 0..n {
                    let v = planes
                        .chunks_exact(n)
                        .enumerate()
                        .fold(0u64, |v, (b, plane)| v | u64::from(plane[i]) << (8 * b));
                    put(i, v);
                }
            }
        }
        Ok(())
    }

    /// `n` values of byte planes no wider than `max_width`, into `out`.
    fn values_into(&mut self, n: usize, max_width: u8, out: &mut Vec<u64>) -> Result<(), String> {
        out.clear();
        out.reserve(n);
        self.each_value(n, max_width, |_, v| out.push(v))
    }
}

/// What a reading thread keeps from one chunk's decoding to the next: its
/// zstd context (making one per chunk, allocating and clearing its tables,
/// took a tenth of a no-index scan's time) and the column buffers (a fresh
/// 64 KiB buffer per chunk, and the page faults behind it, took another
/// tenth).
#[derive(Default)]
struct DecodeState {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    cols: Vec<u8>,
    deltas: Vec<u64>,
    starts: Vec<usize>,
}

thread_local! {
    static DECODE_STATE: std::cell::RefCell<DecodeState> =
        std::cell::RefCell::new(DecodeState::default());
}

impl DecodeState {
    /// Runs `f` with this thread's state (a fresh one if it is in use).
    fn with<R>(f: impl FnOnce(&mut DecodeState) -> Result<R, String>) -> Result<R, String> {
        DECODE_STATE.with(|cell| match cell.try_borrow_mut() {
            Ok(mut state) => f(&mut state),
            Err(_) => f(&mut DecodeState::default()),
        })
    }
}

/// The zstd context in `slot`, made on first use.
fn context<'a>(
    slot: &'a mut Option<zstd::bulk::Decompressor<'static>>,
) -> Result<&'a mut zstd::bulk::Decompressor<'static>, String> {
    match slot {
        Some(z) => Ok(z),
        None => Ok(slot.insert(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?)),
    }
}

/// Appends what `write` puts into `out`'s spare room (at least `room`
/// bytes of it, never zero-filled first: zeroing a chunk-sized output per
/// chunk was a `memset` in profiles) and returns its length; on an error,
/// or a length that does not match what `out` now holds, `out` is as it
/// was.
fn append_in_spare_room(
    out: &mut Vec<u8>,
    room: usize,
    write: impl FnOnce(&mut std::io::Cursor<&mut Vec<u8>>) -> std::io::Result<usize>,
) -> Result<usize, String> {
    let start = out.len();
    out.reserve(room);
    let mut dst = std::io::Cursor::new(&mut *out);
    dst.set_position(start as u64);
    match write(&mut dst) {
        Ok(n) if out.len() == start + n => Ok(n),
        Ok(n) => {
            let appended = out.len() - start;
            out.truncate(start);
            Err(format!("zstd wrote {n} bytes, {appended} appended"))
        }
        Err(e) => {
            out.truncate(start);
            Err(format!("zstd: {e}"))
        }
    }
}

/// zstd `body` appended to `out`: at most `limit` bytes, or an error (and
/// `out` as it was). It allocates no more than `limit` bytes.
fn decompress_into(
    zstd: &mut zstd::bulk::Decompressor<'static>,
    body: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<usize, String> {
    let start = out.len();
    let n = append_in_spare_room(out, limit, |dst| zstd.decompress_to_buffer(body, dst))?;
    // The spare room may be larger than `limit` (a buffer kept from a
    // larger chunk): more than `limit` bytes is refused after the fact.
    if n > limit {
        out.truncate(start);
        return Err(format!(
            "zstd body holds {n} bytes, at most {limit} expected"
        ));
    }
    Ok(n)
}

/// Rebuilds the payload of a chunk from a frame body, into a new vector.
/// `payload_len` and `count` come from the frame header; see
/// [`decode_into`].
pub(crate) fn decode(
    codec: Codec,
    body: &[u8],
    payload_len: usize,
    count: u32,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(payload_len);
    decode_into(codec, body, payload_len, count, &mut out)?;
    Ok(out)
}

/// Rebuilds the payload of a chunk from a frame body, appended to `out`
/// (what `out` holds before is left alone: a caller puts the chunk header
/// there). `payload_len` and `count` come from the frame header: `out`
/// grows by `payload_len` at most, this thread's scratch to at most
/// `payload_len` bytes of columns and two vectors of one word per record
/// (`count`, checked against `payload_len` first), and a body that does
/// not rebuild exactly `payload_len` bytes is an error (`out` then holds
/// part of a payload after what it held: callers drop it).
pub(crate) fn decode_into(
    codec: Codec,
    body: &[u8],
    payload_len: usize,
    count: u32,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match codec {
        Codec::Stored => {
            if body.len() != payload_len {
                return Err(format!(
                    "stored body of {} bytes, header says {payload_len}",
                    body.len()
                ));
            }
            out.extend_from_slice(body);
            Ok(())
        }
        Codec::Columns => DecodeState::with(|s| {
            let DecodeState {
                zstd,
                cols,
                deltas,
                starts,
            } = s;
            cols.clear();
            decompress_into(context(zstd)?, body, payload_len, cols)?;
            rebuild(cols, payload_len, count, deltas, starts, out)
        }),
        Codec::Zstd => DecodeState::with(|s| {
            let n = decompress_into(context(&mut s.zstd)?, body, payload_len, out)?;
            if n != payload_len {
                out.truncate(out.len() - n);
                return Err(format!("zstd body of {n} bytes, header says {payload_len}"));
            }
            Ok(())
        }),
    }
}

/// The payload rebuilt from its columns, appended to `out`. `deltas` and
/// `starts` are scratch.
fn rebuild(
    cols: &[u8],
    payload_len: usize,
    count: u32,
    deltas: &mut Vec<u64>,
    starts: &mut Vec<usize>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let n = count as usize;
    // Every record takes at least two bytes of payload.
    if n == 0 || n.saturating_mul(2) > payload_len {
        return Err(format!("{n} records cannot fill {payload_len} bytes"));
    }
    let base = out.len();
    let mut c = Columns { b: cols, pos: 0 };
    let kind = c.byte()?;
    deltas.clear();
    deltas.reserve(n);
    let mut prev_d = 0u64;
    c.each_value(n, 8, |_, z| {
        prev_d = prev_d.wrapping_add(unzigzag(z) as u64);
        deltas.push(prev_d);
    })?;
    match kind {
        KIND_FIXED => rebuild_fixed(&mut c, cols, deltas, payload_len, starts, out)?,
        KIND_VARIABLE => {
            let mut lens = Vec::new();
            c.values_into(n, 4, &mut lens)?;
            let mut head = [0u8; 20];
            for (&d, &len) in deltas.iter().zip(&lens) {
                let rec = c.take(len as usize)?;
                let k = put_varint(&mut head, d);
                let k = k + put_varint(&mut head[k..], rec.len() as u64);
                if out.len() - base + k + rec.len() > payload_len {
                    return Err(format!(
                        "records rebuild past the declared {payload_len} bytes"
                    ));
                }
                out.extend_from_slice(&head[..k]);
                out.extend_from_slice(rec);
            }
        }
        k => return Err(format!("unknown column kind {k}")),
    }
    if c.pos != cols.len() {
        return Err("columns have trailing bytes".into());
    }
    if out.len() - base != payload_len {
        return Err(format!(
            "records rebuild {} bytes, the header says {payload_len}",
            out.len() - base
        ));
    }
    Ok(())
}

/// The records of a chunk of fixed-size records, appended to `out`: each
/// record's header (time delta and length varints) goes out first at its
/// place, then the lanes fill the records' bytes in place (no second copy).
fn rebuild_fixed(
    c: &mut Columns<'_>,
    cols: &[u8],
    deltas: &[u64],
    payload_len: usize,
    starts: &mut Vec<usize>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let n = deltas.len();
    let mut head = [0u8; 20];
    let mut p = c.pos;
    let len = get_varint(cols, &mut p).ok_or("bad record length")? as usize;
    c.pos = p;
    let total = len.checked_mul(n).filter(|&t| t <= payload_len);
    total.ok_or_else(|| format!("{n} records of {len} bytes exceed the chunk"))?;
    let base = out.len();
    let limit = base + payload_len;
    out.resize(limit, 0);
    starts.clear();
    starts.reserve(n);
    let mut pos = base;
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
        if end > limit {
            return Err(format!(
                "records rebuild past the declared {payload_len} bytes"
            ));
        }
        starts.push(pos + k);
        pos = end;
    }
    out.truncate(pos);
    // Every `starts[i] + len` is at most `pos`, the output's length, so the
    // lane writes below stay inside it.
    for lane in 0..len / 4 {
        let at = lane * 4;
        let mut put = |i: usize, w: u32| {
            let s = starts[i] + at;
            out[s..s + 4].copy_from_slice(&w.to_le_bytes());
        };
        match c.byte()? {
            LANE_RAW => c.each_value(n, 4, |i, v| put(i, v as u32))?,
            LANE_DELTA => {
                let mut prev = 0u32;
                c.each_value(n, 4, |i, v| {
                    prev = prev.wrapping_add(unzigzag(v) as i32 as u32);
                    put(i, prev);
                })?
            }
            m => return Err(format!("unknown lane mode {m}")),
        }
    }
    for off in (len / 4) * 4..len {
        if c.byte()? != LANE_RAW {
            return Err("a tail byte lane is not raw".into());
        }
        c.each_value(n, 1, |i, v| out[starts[i] + off] = v as u8)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
