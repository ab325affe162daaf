//! Recovery's scan of a version-2 (compressed) segment file: every frame
//! checked (magic, sizes, address, CRC-32C), damaged regions skipped to the
//! next valid frame, zeros after the last frame read as the end.

use crate::log::chunk::padded;
use crate::storage::frame::{FrameHeader, FrameLoc, FILE_HEADER, FRAME_MAGIC};
use crate::storage::recovery::{next_nonzero, BadRegion, RecoveredChunk, Scan};

impl Scan<'_> {
    /// Whether a frame header at `o` is a valid frame of segment `seg`
    /// that may follow a chunk ending at `after`.
    fn valid_frame(
        &self,
        bytes: &[u8],
        o: usize,
        seg: u64,
        after: u64,
    ) -> Result<FrameHeader, String> {
        let cs = self.layout.chunk_size;
        let h = match FrameHeader::read(&bytes[o..], cs)? {
            Some(h) => h,
            None => return Err("frame with a zero magic".into()),
        };
        let base = seg * self.layout.segment_size;
        let end = h.addr.checked_add(padded(h.chunk.len as usize) as u64);
        let inside = h.addr >= base && end.is_some_and(|e| e <= base + self.layout.segment_size);
        if !inside || h.addr % 8 != 0 {
            return Err(format!("frame address {} outside segment {seg}", h.addr));
        }
        if h.addr < after {
            return Err(format!(
                "frame address {} before the previous chunk's end {after}",
                h.addr
            ));
        }
        h.verify(&bytes[o..])?;
        Ok(h)
    }

    /// Offset of the next valid frame in `bytes[from..]` (8-byte steps).
    fn next_frame(&self, bytes: &[u8], from: usize, seg: u64, after: u64) -> Option<usize> {
        let magic = FRAME_MAGIC.to_le_bytes();
        let mut o = from.div_ceil(8) * 8;
        while o + 8 <= bytes.len() {
            if bytes[o..o + 4] == magic && self.valid_frame(bytes, o, seg, after).is_ok() {
                return Some(o);
            }
            o += 8;
        }
        None
    }

    /// Reads the frames of segment `seg`'s file `bytes` (its header checked
    /// by the caller).
    pub(crate) fn frames_of(&mut self, seg: u64, bytes: &[u8]) {
        let base = seg * self.layout.segment_size;
        let mut after = base;
        let mut o = FILE_HEADER;
        while o + 4 <= bytes.len() {
            // Bad regions count at the end of the last good chunk: a valid
            // chunk after them makes them skipped, none the torn tail.
            let at = self.end.max(after);
            let problem = match FrameHeader::read(&bytes[o..], self.layout.chunk_size) {
                Ok(None) => match next_nonzero(bytes, o) {
                    None => return,
                    Some(n) if n == o => Some("frame with a zero magic".to_string()),
                    Some(n) => {
                        self.bad.push(BadRegion {
                            at,
                            place: (seg, o as u64),
                            reason: format!("{} bytes of zeros", n - o),
                            zeros: true,
                        });
                        o = n;
                        continue;
                    }
                },
                Ok(Some(_)) => match self.valid_frame(bytes, o, seg, after) {
                    Ok(h) => {
                        let summaries = self.summaries_for(h.addr, &h.chunk);
                        self.chunks.push(RecoveredChunk {
                            addr: h.addr,
                            header: h.chunk,
                            summaries,
                        });
                        self.frames.push(FrameLoc {
                            addr: h.addr,
                            offset: o as u64,
                            len: h.frame_len() as u32,
                        });
                        after = h.addr + padded(h.chunk.len as usize) as u64;
                        self.end = after;
                        o += padded(h.frame_len());
                        self.file_end = o as u64;
                        None
                    }
                    Err(reason) => Some(reason),
                },
                Err(reason) => Some(reason),
            };
            if let Some(reason) = problem {
                self.bad.push(BadRegion {
                    at,
                    place: (seg, o as u64),
                    reason,
                    zeros: false,
                });
                match self.next_frame(bytes, o + 8, seg, after) {
                    Some(n) => o = n,
                    None => return,
                }
            }
        }
    }
}
