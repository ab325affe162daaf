//! The segment index: one file beside each segment (`segment-N.idx`) listing
//! that segment's chunks (address, source, time span, count, checksum) with
//! their range-index summaries, so reopening a store reads these small files
//! instead of the whole log.
//!
//! Layout: a 16-byte header (`LOOMSIX3`, segment number u64; files of
//! format versions 1 and 2 begin `LOOMSIX1`, `LOOMSIX2` and are read the
//! same: they hold no entries of types 6 and 7) then entries,
//! each `len u32 | crc32c u32 | payload`, payload starting with a type byte:
//!
//! - `1` chunk: addr, source, prev, first_ts, last_ts (u64), count, chunk crc
//!   (u32), then a summary list (`0` = none, else `1` and the list);
//! - `2` summaries of an earlier chunk (recovered chunks indexed later): addr
//!   u64 and the list;
//! - `3` footer: the segment is complete and its data durable; data_end u64
//!   (address past its last chunk), chunks u64;
//! - `5` chunk, as `1` with the chunk's length u32 after its crc (format
//!   2 writes these; `1` entries read with length 0: unknown);
//! - `4` frames of a version-2 (compressed) segment, written just before
//!   the footer: `varint n`, then per frame `varint(addr − previous addr)`,
//!   `varint(offset − previous offset)`, `varint len` (see `frame.rs`);
//! - `6` chunk, as `5` with per-value counts in its summary list, and `7`
//!   summaries, as `2` with them (format 3 writes these, also when
//!   appending to a file of an earlier version: its reader reads both).
//!
//! A summary list is `varint n` then per bin `varint(bin − previous bin)`,
//! `varint count`, `varint min`, `varint(max − min)`, `varint sum_low64`,
//! `varint sum_high64`, and in entries 6 and 7 `varint fine` (the bin's
//! per-value counts, `BinSummary::fine`; 0 when not kept). Reading stops at the first entry that is cut off or
//! fails its checksum; a segment whose valid entries end in a footer is
//! trusted without reading its data, any other is scanned.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::bin_summary::BinSummary;
use crate::error::{Error, Result};
use crate::log::chunk::ChunkHeader;
use crate::storage::frame::FrameLoc;
use summary_list::{encode_summaries, put_u64, put_var, Cursor};

mod summary_list;

const MAGIC: &[u8; 8] = b"LOOMSIX3";
/// The header of index files written by format version 2.
const MAGIC_V2: &[u8; 8] = b"LOOMSIX2";
/// The header of index files written by format version 1.
const MAGIC_V1: &[u8; 8] = b"LOOMSIX1";
const FILE_HEADER: usize = 16;
const ENTRY_HEADER: usize = 8;
/// Largest entry accepted when reading: a chunk touching every bin of a
/// very wide index still fits.
const MAX_ENTRY: usize = 64 << 20;

const T_CHUNK: u8 = 1;
const T_CHUNK_LEN: u8 = 5;
const T_SUMMARIES: u8 = 2;
/// As `T_CHUNK_LEN` and `T_SUMMARIES`, their summaries with per-value
/// counts (format 3 writes these).
const T_CHUNK_FINE: u8 = 6;
const T_SUMMARIES_FINE: u8 = 7;
const T_FOOTER: u8 = 3;
const T_FRAMES: u8 = 4;

/// One chunk as the segment index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexedChunk {
    pub addr: u64,
    pub header: ChunkHeader,
    pub summaries: Option<Vec<BinSummary>>,
}

/// What a segment index file holds (its valid prefix).
#[derive(Debug, Default)]
pub(crate) struct SegmentIndex {
    pub chunks: Vec<IndexedChunk>,
    /// Summaries written after their chunk's entry, by chunk address.
    pub late_summaries: HashMap<u64, Vec<BinSummary>>,
    /// `(data_end, chunks)` when the footer was reached.
    pub footer: Option<(u64, u64)>,
    /// The frames of a version-2 segment, when listed.
    pub frames: Option<Vec<FrameLoc>>,
    /// Why reading stopped early, if it did.
    pub stopped: Option<String>,
    /// Chunks (by address) whose summaries the file holds but that were
    /// not decoded ([`read_lean`]).
    pub on_disk: std::collections::HashSet<u64>,
}

impl SegmentIndex {
    /// The summaries known for the chunk at `addr`.
    pub(crate) fn summaries_of(&self, chunk: &IndexedChunk) -> Option<Vec<BinSummary>> {
        chunk
            .summaries
            .clone()
            .or_else(|| self.late_summaries.get(&chunk.addr).cloned())
    }
}

/// Path of segment `index`'s index file.
pub(crate) fn path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("segment-{index:08}.idx"))
}

fn encode_chunk(c: &IndexedChunk) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    p.push(T_CHUNK_FINE);
    put_u64(&mut p, c.addr);
    put_u64(&mut p, c.header.source);
    put_u64(&mut p, c.header.prev);
    put_u64(&mut p, c.header.first_ts);
    put_u64(&mut p, c.header.last_ts);
    p.extend_from_slice(&c.header.count.to_le_bytes());
    p.extend_from_slice(&c.header.crc.to_le_bytes());
    p.extend_from_slice(&c.header.len.to_le_bytes());
    match &c.summaries {
        None => p.push(0),
        Some(bins) => {
            p.push(1);
            encode_summaries(&mut p, bins);
        }
    }
    p
}

fn decode_entry(payload: &[u8], into: &mut SegmentIndex, lean: bool) -> Result<(), String> {
    let mut c = Cursor { b: payload, pos: 0 };
    match c.u8()? {
        kind @ (T_CHUNK | T_CHUNK_LEN | T_CHUNK_FINE) => {
            let addr = c.u64()?;
            let source = c.u64()?;
            let prev = c.u64()?;
            let first_ts = c.u64()?;
            let last_ts = c.u64()?;
            let count = c.u32()?;
            let crc = c.u32()?;
            let len = if kind == T_CHUNK { 0 } else { c.u32()? };
            let summaries = match c.u8()? {
                0 => None,
                1 if lean => {
                    // The list is the rest of the entry (its checksum was
                    // verified); it is decoded when a query pages it in.
                    into.on_disk.insert(addr);
                    c.pos = payload.len();
                    None
                }
                1 => Some(c.summaries(kind == T_CHUNK_FINE)?),
                other => return Err(format!("bad summary flag {other}")),
            };
            into.chunks.push(IndexedChunk {
                addr,
                header: ChunkHeader {
                    len,
                    source,
                    prev,
                    first_ts,
                    last_ts,
                    count,
                    crc,
                },
                summaries,
            });
        }
        T_SUMMARIES | T_SUMMARIES_FINE if lean => {
            into.on_disk.insert(c.u64()?);
            c.pos = payload.len();
        }
        kind @ (T_SUMMARIES | T_SUMMARIES_FINE) => {
            let addr = c.u64()?;
            let bins = c.summaries(kind == T_SUMMARIES_FINE)?;
            into.late_summaries.insert(addr, bins);
        }
        T_FRAMES => {
            let n = c.var()?;
            if n > (c.b.len() - c.pos) as u64 / 3 {
                return Err(format!("{n} frames cannot fit in the entry"));
            }
            let mut frames = Vec::with_capacity(n as usize);
            let (mut addr, mut offset) = (0u64, 0u64);
            for _ in 0..n {
                addr = addr
                    .checked_add(c.var()?)
                    .ok_or("frame address overflows")?;
                offset = offset
                    .checked_add(c.var()?)
                    .ok_or("frame offset overflows")?;
                let len = u32::try_from(c.var()?).map_err(|_| "frame length too large")?;
                frames.push(FrameLoc { addr, offset, len });
            }
            into.frames = Some(frames);
        }
        T_FOOTER => {
            let end = c.u64()?;
            let chunks = c.u64()?;
            into.footer = Some((end, chunks));
        }
        other => return Err(format!("unknown entry type {other}")),
    }
    if c.pos != payload.len() {
        return Err("entry has trailing bytes".into());
    }
    Ok(())
}

/// Decodes the valid prefix of a segment index file's bytes.
#[cfg(test)]
pub(crate) fn decode(bytes: &[u8], segment: u64) -> SegmentIndex {
    decode_with(bytes, segment, false)
}

/// Decodes the valid prefix of a segment index file's bytes; `lean`
/// leaves summary lists undecoded (listed in `on_disk`).
fn decode_with(bytes: &[u8], segment: u64, lean: bool) -> SegmentIndex {
    let mut out = SegmentIndex::default();
    out.stopped = walk(bytes, segment, |p| decode_entry(p, &mut out, lean));
    out
}

/// Calls `f` with the payload of every valid entry of a segment index
/// file's bytes, in order; returns why it stopped early, if it did.
fn walk(
    bytes: &[u8],
    segment: u64,
    mut f: impl FnMut(&[u8]) -> Result<(), String>,
) -> Option<String> {
    if bytes.len() < FILE_HEADER
        || ![MAGIC, MAGIC_V2, MAGIC_V1]
            .iter()
            .any(|m| &bytes[..8] == m.as_slice())
    {
        return Some("no segment index header".into());
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&bytes[8..16]);
    if u64::from_le_bytes(n) != segment {
        return Some(format!(
            "the file says segment {}, expected {segment}",
            u64::from_le_bytes(n)
        ));
    }
    let mut pos = FILE_HEADER;
    let mut footer = false;
    while pos < bytes.len() {
        let Some(h) = bytes.get(pos..pos + ENTRY_HEADER) else {
            return Some(format!("entry header cut off at byte {pos}"));
        };
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if len == 0 || len > MAX_ENTRY {
            return Some(format!("entry length {len} at byte {pos}"));
        }
        let Some(payload) = bytes.get(pos + ENTRY_HEADER..pos + ENTRY_HEADER + len) else {
            return Some(format!("entry cut off at byte {pos}"));
        };
        if crc32c::crc32c(payload) != crc {
            return Some(format!("entry checksum mismatch at byte {pos}"));
        }
        let late = matches!(payload.first(), Some(&(T_SUMMARIES | T_SUMMARIES_FINE)));
        if footer && !late {
            return Some(format!("entry after the footer at byte {pos}"));
        }
        if let Err(e) = f(payload) {
            return Some(format!("bad entry at byte {pos}: {e}"));
        }
        footer |= payload.first() == Some(&T_FOOTER);
        pos += ENTRY_HEADER + len;
    }
    None
}

/// The summaries a segment index file holds, flat: what paging in a
/// segment needs (`index/paged.rs`), without a list per chunk.
#[derive(Debug, Default)]
pub(crate) struct FlatSummaries {
    /// `(chunk address, first summary in bins, summaries)`, in file order.
    pub chunks: Vec<(u64, u32, u32)>,
    pub bins: Vec<BinSummary>,
}

/// Reads the summaries of source `source`'s chunks from segment
/// `segment`'s index file (the valid prefix; an absent file reads as
/// empty). Paging in by source, not the whole segment, keeps a query's
/// working set to the series it asks about: a segment holds every source's
/// chunks, and one busy source's summaries would otherwise evict another's.
pub(crate) fn read_flat(dir: &Path, segment: u64, source: u64) -> Result<FlatSummaries> {
    let p = path(dir, segment);
    let bytes = match fs::read(&p) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FlatSummaries::default()),
        Err(e) => return Err(Error::io(&p, e)),
    };
    Ok(decode_flat(&bytes, segment, source))
}

/// The summaries of source `source`'s chunks in the valid prefix of a
/// segment index file's bytes. Other sources' entries are checked (the
/// walk verifies every checksum) but their summaries are not decoded.
fn decode_flat(bytes: &[u8], segment: u64, source: u64) -> FlatSummaries {
    let mut out = FlatSummaries::default();
    // Late summaries name their chunk by address only; their chunk's
    // entry always comes earlier in the same file.
    let mut ours = std::collections::HashSet::new();
    walk(bytes, segment, |payload| {
        let mut c = Cursor { b: payload, pos: 0 };
        let kind = c.u8()?;
        if !matches!(
            kind,
            T_CHUNK | T_CHUNK_LEN | T_CHUNK_FINE | T_SUMMARIES | T_SUMMARIES_FINE
        ) {
            return Ok(());
        }
        let addr = c.u64()?;
        if matches!(kind, T_SUMMARIES | T_SUMMARIES_FINE) {
            if !ours.contains(&addr) {
                return Ok(());
            }
        } else {
            if c.u64()? != source {
                return Ok(());
            }
            ours.insert(addr);
            // prev, first_ts, last_ts, count, crc (and len).
            c.pos += 3 * 8 + 4 + 4 + if kind == T_CHUNK { 0 } else { 4 };
            if c.u8()? != 1 {
                return Ok(());
            }
        }
        let start = out.bins.len();
        let fine = matches!(kind, T_CHUNK_FINE | T_SUMMARIES_FINE);
        let n = c.summaries_into(&mut out.bins, fine)?;
        let (start, n) = (
            u32::try_from(start).map_err(|_| "too many summaries")?,
            u32::try_from(n).map_err(|_| "too many summaries")?,
        );
        out.chunks.push((addr, start, n));
        Ok(())
    });
    out
}

/// The chunk entries of source `source` in a segment index file's bytes
/// (its valid prefix), in file order, without their summaries: what paging
/// a source's directory entries back in needs (`index/directory.rs`).
/// Other sources' entries are checked but not decoded.
pub(crate) fn decode_chunk_entries(
    bytes: &[u8],
    segment: u64,
    source: u64,
) -> Vec<(u64, ChunkHeader)> {
    let mut out = Vec::new();
    walk(bytes, segment, |payload| {
        let mut c = Cursor { b: payload, pos: 0 };
        let kind = c.u8()?;
        if !matches!(kind, T_CHUNK | T_CHUNK_LEN | T_CHUNK_FINE) {
            return Ok(());
        }
        let addr = c.u64()?;
        if c.u64()? != source {
            return Ok(());
        }
        let header = ChunkHeader {
            source,
            prev: c.u64()?,
            first_ts: c.u64()?,
            last_ts: c.u64()?,
            count: c.u32()?,
            crc: c.u32()?,
            len: if kind == T_CHUNK { 0 } else { c.u32()? },
        };
        out.push((addr, header));
        Ok(())
    });
    out
}

/// Reads segment `segment`'s index file; an absent file reads as empty.
pub(crate) fn read(dir: &Path, segment: u64) -> Result<SegmentIndex> {
    read_with(dir, segment, false)
}

/// Reads segment `segment`'s index file without decoding its summaries
/// (every entry's checksum is still verified): what a reopen needs of a
/// segment whose summaries stay paged out.
pub(crate) fn read_lean(dir: &Path, segment: u64) -> Result<SegmentIndex> {
    read_with(dir, segment, true)
}

fn read_with(dir: &Path, segment: u64, lean: bool) -> Result<SegmentIndex> {
    let p = path(dir, segment);
    match fs::read(&p) {
        Ok(bytes) => Ok(decode_with(&bytes, segment, lean)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SegmentIndex {
            stopped: Some("no segment index file".into()),
            ..SegmentIndex::default()
        }),
        Err(e) => Err(Error::io(&p, e)),
    }
}

/// Appends entries to one segment's index file.
pub(crate) struct SegmentIndexWriter {
    pub segment: u64,
    path: PathBuf,
    out: BufWriter<File>,
    scratch: Vec<u8>,
}

impl SegmentIndexWriter {
    /// Creates (truncating) the index file of `segment`.
    pub(crate) fn create(dir: &Path, segment: u64) -> std::io::Result<Self> {
        let p = path(dir, segment);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)?;
        let mut w = SegmentIndexWriter {
            segment,
            path: p,
            out: BufWriter::with_capacity(256 << 10, file),
            scratch: Vec::new(),
        };
        w.out.write_all(MAGIC)?;
        w.out.write_all(&segment.to_le_bytes())?;
        Ok(w)
    }

    /// Opens an existing, valid index file of `segment` to append to it.
    pub(crate) fn append_to(dir: &Path, segment: u64) -> std::io::Result<Self> {
        let p = path(dir, segment);
        let file = OpenOptions::new().append(true).open(&p)?;
        Ok(SegmentIndexWriter {
            segment,
            path: p,
            out: BufWriter::with_capacity(256 << 10, file),
            scratch: Vec::new(),
        })
    }

    fn entry(&mut self, payload: &[u8]) -> std::io::Result<()> {
        self.scratch.clear();
        self.scratch
            .extend_from_slice(&(payload.len() as u32).to_le_bytes());
        self.scratch
            .extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        self.out.write_all(&self.scratch)?;
        self.out.write_all(payload)
    }

    pub(crate) fn chunk(&mut self, c: &IndexedChunk) -> std::io::Result<()> {
        self.entry(&encode_chunk(c))
    }

    pub(crate) fn summaries(&mut self, addr: u64, bins: &[BinSummary]) -> std::io::Result<()> {
        let mut p = vec![T_SUMMARIES_FINE];
        put_u64(&mut p, addr);
        encode_summaries(&mut p, bins);
        self.entry(&p)
    }

    /// Lists the frames of a version-2 segment (before its footer).
    pub(crate) fn frames(&mut self, frames: &[FrameLoc]) -> std::io::Result<()> {
        let mut p = vec![T_FRAMES];
        put_var(&mut p, frames.len() as u64);
        let (mut addr, mut offset) = (0u64, 0u64);
        for f in frames {
            put_var(&mut p, f.addr.wrapping_sub(addr));
            put_var(&mut p, f.offset.wrapping_sub(offset));
            put_var(&mut p, u64::from(f.len));
            addr = f.addr;
            offset = f.offset;
        }
        self.entry(&p)
    }

    /// Writes the footer and syncs the file: the segment is complete.
    pub(crate) fn finish(&mut self, data_end: u64, chunks: u64) -> std::io::Result<()> {
        let mut p = vec![T_FOOTER];
        put_u64(&mut p, data_end);
        put_u64(&mut p, chunks);
        self.entry(&p)?;
        self.sync()
    }

    /// Hands buffered entries to the kernel (enough for a process crash).
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    pub(crate) fn sync(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests;
