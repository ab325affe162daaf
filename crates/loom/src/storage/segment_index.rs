//! The segment index: one file beside each segment (`segment-N.idx`) listing
//! that segment's chunks (address, source, time span, count, checksum) with
//! their range-index summaries, so reopening a store reads these small files
//! instead of the whole log.
//!
//! Layout: a 16-byte header (`LOOMSIX2`, segment number u64; files of
//! format version 1 begin `LOOMSIX1` and are read the same) then entries,
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
//!   `varint(offset − previous offset)`, `varint len` (see `frame.rs`).
//!
//! A summary list is `varint n` then per bin `varint(bin − previous bin)`,
//! `varint count`, `varint min`, `varint(max − min)`, `varint sum_low64`,
//! `varint sum_high64`. Reading stops at the first entry that is cut off or
//! fails its checksum; a segment whose valid entries end in a footer is
//! trusted without reading its data, any other is scanned.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::bin_summary::BinSummary;
use crate::error::{Error, Result};
use crate::log::chunk::ChunkHeader;
use crate::log::record::{get_varint, put_varint};
use crate::storage::frame::FrameLoc;

const MAGIC: &[u8; 8] = b"LOOMSIX2";
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

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_var(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 10];
    let n = put_varint(&mut b, v);
    out.extend_from_slice(&b[..n]);
}

fn encode_summaries(out: &mut Vec<u8>, bins: &[BinSummary]) {
    put_var(out, bins.len() as u64);
    let mut prev = 0u32;
    for b in bins {
        put_var(out, u64::from(b.bin.wrapping_sub(prev)));
        prev = b.bin;
        put_var(out, u64::from(b.count));
        put_var(out, b.min);
        put_var(out, b.max.wrapping_sub(b.min));
        put_var(out, b.sum as u64);
        put_var(out, (b.sum >> 64) as u64);
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn u64(&mut self) -> Result<u64, String> {
        let s = self
            .b
            .get(self.pos..self.pos + 8)
            .ok_or("entry ends inside a number")?;
        self.pos += 8;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let s = self
            .b
            .get(self.pos..self.pos + 4)
            .ok_or("entry ends inside a number")?;
        self.pos += 4;
        let mut a = [0u8; 4];
        a.copy_from_slice(s);
        Ok(u32::from_le_bytes(a))
    }

    fn u8(&mut self) -> Result<u8, String> {
        let v = *self.b.get(self.pos).ok_or("entry ends early")?;
        self.pos += 1;
        Ok(v)
    }

    fn var(&mut self) -> Result<u64, String> {
        get_varint(self.b, &mut self.pos).ok_or_else(|| "bad varint".to_string())
    }

    fn summaries(&mut self) -> Result<Vec<BinSummary>, String> {
        let n = self.var()?;
        if n > (self.b.len() - self.pos) as u64 {
            return Err(format!("{n} summaries cannot fit in the entry"));
        }
        let mut out = Vec::with_capacity(n as usize);
        let mut bin = 0u32;
        for _ in 0..n {
            let delta = u32::try_from(self.var()?).map_err(|_| "bin delta too large")?;
            bin = bin.checked_add(delta).ok_or("bin number overflows")?;
            let count = u32::try_from(self.var()?).map_err(|_| "bin count too large")?;
            let min = self.var()?;
            let max = min.checked_add(self.var()?).ok_or("bin max overflows")?;
            let lo = self.var()?;
            let hi = self.var()?;
            out.push(BinSummary {
                bin,
                count,
                min,
                max,
                sum: u128::from(lo) | (u128::from(hi) << 64),
            });
        }
        Ok(out)
    }
}

fn encode_chunk(c: &IndexedChunk) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    p.push(T_CHUNK_LEN);
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

fn decode_entry(payload: &[u8], into: &mut SegmentIndex) -> Result<(), String> {
    let mut c = Cursor { b: payload, pos: 0 };
    match c.u8()? {
        kind @ (T_CHUNK | T_CHUNK_LEN) => {
            let addr = c.u64()?;
            let source = c.u64()?;
            let prev = c.u64()?;
            let first_ts = c.u64()?;
            let last_ts = c.u64()?;
            let count = c.u32()?;
            let crc = c.u32()?;
            let len = if kind == T_CHUNK_LEN { c.u32()? } else { 0 };
            let summaries = match c.u8()? {
                0 => None,
                1 => Some(c.summaries()?),
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
        T_SUMMARIES => {
            let addr = c.u64()?;
            let bins = c.summaries()?;
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
pub(crate) fn decode(bytes: &[u8], segment: u64) -> SegmentIndex {
    let mut out = SegmentIndex::default();
    if bytes.len() < FILE_HEADER || (&bytes[..8] != MAGIC && &bytes[..8] != MAGIC_V1) {
        out.stopped = Some("no segment index header".into());
        return out;
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&bytes[8..16]);
    if u64::from_le_bytes(n) != segment {
        out.stopped = Some(format!(
            "the file says segment {}, expected {segment}",
            u64::from_le_bytes(n)
        ));
        return out;
    }
    let mut pos = FILE_HEADER;
    while pos < bytes.len() {
        let Some(h) = bytes.get(pos..pos + ENTRY_HEADER) else {
            out.stopped = Some(format!("entry header cut off at byte {pos}"));
            break;
        };
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if len == 0 || len > MAX_ENTRY {
            out.stopped = Some(format!("entry length {len} at byte {pos}"));
            break;
        }
        let Some(payload) = bytes.get(pos + ENTRY_HEADER..pos + ENTRY_HEADER + len) else {
            out.stopped = Some(format!("entry cut off at byte {pos}"));
            break;
        };
        if crc32c::crc32c(payload) != crc {
            out.stopped = Some(format!("entry checksum mismatch at byte {pos}"));
            break;
        }
        if out.footer.is_some() && payload.first() != Some(&T_SUMMARIES) {
            out.stopped = Some(format!("entry after the footer at byte {pos}"));
            break;
        }
        if let Err(e) = decode_entry(payload, &mut out) {
            out.stopped = Some(format!("bad entry at byte {pos}: {e}"));
            break;
        }
        pos += ENTRY_HEADER + len;
    }
    out
}

/// Reads segment `segment`'s index file; an absent file reads as empty.
pub(crate) fn read(dir: &Path, segment: u64) -> Result<SegmentIndex> {
    let p = path(dir, segment);
    match fs::read(&p) {
        Ok(bytes) => Ok(decode(&bytes, segment)),
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
        let mut p = vec![T_SUMMARIES];
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
mod tests {
    use super::*;

    fn chunk(addr: u64, summaries: Option<Vec<BinSummary>>) -> IndexedChunk {
        IndexedChunk {
            addr,
            header: ChunkHeader {
                len: 0,
                source: 0xabc,
                prev: u64::MAX,
                first_ts: 10,
                last_ts: 20,
                count: 3,
                crc: 0x1234_5678,
            },
            summaries,
        }
    }

    fn bins() -> Vec<BinSummary> {
        vec![
            BinSummary {
                bin: 0,
                count: 1,
                min: 0,
                max: 0,
                sum: 0,
            },
            BinSummary {
                bin: 9_999,
                count: 2,
                min: 99_990,
                max: u64::MAX,
                sum: u128::from(u64::MAX) + 99_990,
            },
        ]
    }

    #[test]
    fn entries_round_trip_and_a_torn_tail_is_cut() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut w = SegmentIndexWriter::create(dir.path(), 3)?;
        w.chunk(&chunk(0, Some(bins())))?;
        w.chunk(&chunk(4096, None))?;
        w.summaries(4096, &bins())?;
        let frames = [
            FrameLoc {
                addr: 0,
                offset: 16,
                len: 100,
            },
            FrameLoc {
                addr: 4096,
                offset: 120,
                len: 77,
            },
        ];
        w.frames(&frames)?;
        w.finish(8192, 2)?;
        let r = read(dir.path(), 3)?;
        assert_eq!(r.stopped, None);
        assert_eq!(r.chunks, vec![chunk(0, Some(bins())), chunk(4096, None)]);
        assert_eq!(r.summaries_of(&r.chunks[1]), Some(bins()));
        assert_eq!(r.footer, Some((8192, 2)));
        assert_eq!(r.frames.as_deref(), Some(&frames[..]));
        assert!(read(dir.path(), 4)?.chunks.is_empty());

        let mut bytes = fs::read(path(dir.path(), 3))?;
        bytes.truncate(bytes.len() - 3);
        let cut = decode(&bytes, 3);
        assert_eq!(cut.chunks.len(), 2);
        assert_eq!(cut.footer, None);
        assert!(cut.stopped.is_some());

        let mut bytes = fs::read(path(dir.path(), 3))?;
        bytes[FILE_HEADER + 12] ^= 1;
        let bad = decode(&bytes, 3);
        assert!(bad.chunks.is_empty());
        assert!(bad.stopped.ok_or("no stop reason")?.contains("checksum"));
        Ok(())
    }
}
