//! Version-1 segments scanned block by block, chunk by chunk (magic,
//! length, CRC-32C): what recovery finds when a segment has no complete
//! index file. Version-2 segments (compressed frames) are scanned by
//! `storage/frame_scan.rs` into the same [`Scan`].

use std::collections::HashMap;
use std::fs;
use std::io::Read;

use crate::bin_summary::BinSummary;
use crate::log::chunk::{padded, ChunkHeader, CHUNK_MAGIC, HEADER_LEN};
use crate::storage::frame::FrameLoc;
use crate::storage::layout::Layout;
use crate::storage::segment_index::IndexedChunk;

use super::RecoveredChunk;

/// A region the scan could not read as chunks; whether it is a skipped
/// corruption or the torn tail is decided once the end of the log is known.
pub(crate) struct BadRegion {
    /// Log address at which it counts: a valid chunk after it means it was
    /// skipped, none means the torn tail.
    pub at: u64,
    /// Where it is reported: segment and offset in the segment file.
    pub place: (u64, u64),
    pub reason: String,
    pub zeros: bool,
}

pub(crate) struct Scan<'a> {
    pub layout: Layout,
    pub chunks: Vec<RecoveredChunk>,
    pub bad: Vec<BadRegion>,
    pub end: u64,
    pub by_addr: HashMap<u64, &'a IndexedChunk>,
    /// Frames found in a version-2 segment.
    pub frames: Vec<FrameLoc>,
    /// Offset just past the last valid frame of a version-2 segment.
    pub file_end: u64,
}

impl Scan<'_> {
    /// The summaries the segment index holds for a chunk found at `at`
    /// with header `h`, if the index entry describes the same chunk.
    pub(crate) fn summaries_for(&self, at: u64, h: &ChunkHeader) -> Option<Vec<BinSummary>> {
        self.by_addr.get(&at).and_then(|c| {
            let same = c.header.source == h.source
                && c.header.count == h.count
                && c.header.first_ts == h.first_ts
                && c.header.last_ts == h.last_ts
                && c.header.crc == h.crc;
            same.then(|| c.summaries.clone()).flatten()
        })
    }
}

/// Offset of the first valid chunk in `bytes[from..]` (8-byte steps).
fn next_valid(bytes: &[u8], from: usize, chunk_size: usize) -> Option<usize> {
    let magic = CHUNK_MAGIC.to_le_bytes();
    let mut o = from.div_ceil(8) * 8;
    while o + HEADER_LEN <= bytes.len() {
        if bytes[o..o + 4] == magic {
            if let Ok(Some(h)) = ChunkHeader::read(&bytes[o..]) {
                if h.count > 0 && h.verify(&bytes[o..], chunk_size).is_ok() {
                    return Some(o);
                }
            }
        }
        o += 8;
    }
    None
}

/// Offset of the first non-zero 8-byte word in `bytes[from..]`.
pub(crate) fn next_nonzero(bytes: &[u8], from: usize) -> Option<usize> {
    let mut o = from.div_ceil(8) * 8;
    while o + 8 <= bytes.len() {
        if bytes[o..o + 8].iter().any(|&b| b != 0) {
            return Some(o);
        }
        o += 8;
    }
    None
}

impl Scan<'_> {
    /// Reads one block's chunks.
    pub(super) fn block(&mut self, base: u64, bytes: &[u8]) {
        let cs = self.layout.chunk_size;
        let mut o = 0usize;
        while o + 4 <= bytes.len() {
            let at = base + o as u64;
            let problem = match ChunkHeader::read(&bytes[o..]) {
                Ok(None) => {
                    // Zeros: normally the unused rest of the block. Data
                    // after them is reported as a hole.
                    match next_nonzero(bytes, o) {
                        None => return,
                        // A zero magic with bytes after it: not zeros, garbage.
                        Some(n) if n == o => Some("chunk with a zero magic".to_string()),
                        Some(n) => {
                            self.bad.push(BadRegion {
                                at,
                                place: self.layout.locate(at),
                                reason: format!("{} bytes of zeros", n - o),
                                zeros: true,
                            });
                            o = n;
                            continue;
                        }
                    }
                }
                Ok(Some(h)) => match h.verify(&bytes[o..], cs) {
                    Ok(()) if h.count == 0 => Some("chunk with zero records".to_string()),
                    Ok(()) => {
                        let summaries = self.summaries_for(at, &h);
                        self.chunks.push(RecoveredChunk {
                            addr: at,
                            header: h,
                            summaries,
                        });
                        o += padded(h.len as usize);
                        self.end = base + o as u64;
                        None
                    }
                    Err(reason) => Some(reason),
                },
                Err(reason) => Some(reason),
            };
            if let Some(reason) = problem {
                self.bad.push(BadRegion {
                    at,
                    place: self.layout.locate(at),
                    reason,
                    zeros: false,
                });
                match next_valid(bytes, o + 8, cs) {
                    Some(n) => o = n,
                    None => return,
                }
            }
        }
    }
}

pub(super) fn read_full(file: &mut fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
