//! Compressed segment files (format version 2): a 16-byte file header, then
//! one frame per chunk, each frame 8-byte aligned, zeros after the last.
//!
//! The log keeps its address space: a chunk's log address is where it sat
//! in its in-memory block, as in version 1, and segment `k` still holds the
//! chunks of addresses `[k * segment_size, (k + 1) * segment_size)`. Only
//! the bytes on disk are packed: a frame records its chunk's log address,
//! and the segment index (or a scan) maps addresses to frame offsets.
//!
//! File header: `LOOMSEG2`, segment number u64. Frame (little endian):
//!
//! | offset | field | meaning |
//! | --- | --- | --- |
//! | 0 | magic u32 | `FRAME_MAGIC` |
//! | 4 | body_len u32 | bytes of the body after the 72-byte header |
//! | 8 | addr u64 | log address of the chunk |
//! | 16 | source u64 | as in the chunk header |
//! | 24 | prev u64 | as in the chunk header |
//! | 32 | first_ts u64 | as in the chunk header |
//! | 40 | last_ts u64 | as in the chunk header |
//! | 48 | count u32 | as in the chunk header |
//! | 52 | chunk_len u32 | the chunk's uncompressed length (header + payload) |
//! | 56 | chunk_crc u32 | the chunk's own checksum, checked after decoding |
//! | 60 | codec u8 | `log::codec::Codec`; 3 zero bytes follow |
//! | 64 | crc u32 | CRC-32C of bytes 0..64 and the body |
//! | 68 | zero u32 | |
//!
//! The frame checksum finds damaged bytes on disk without decoding; the
//! chunk checksum proves the decoded records are exactly those written.

use crate::log::chunk::{padded, ChunkHeader, HEADER_LEN};
use crate::log::codec::{self, Codec};

/// First bytes of a version-2 segment file.
pub(crate) const FILE_MAGIC: &[u8; 8] = b"LOOMSEG2";
/// Bytes of the segment file header.
pub(crate) const FILE_HEADER: usize = 16;
/// Marks the start of a frame.
pub(crate) const FRAME_MAGIC: u32 = 0x5a4d_4f4c; // "LOMZ"
/// Bytes of a frame header.
pub(crate) const FRAME_HEADER: usize = 72;

/// Where a chunk's frame sits in its segment file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameLoc {
    /// Log address of the chunk.
    pub addr: u64,
    /// Offset of the frame in the segment file.
    pub offset: u64,
    /// Frame bytes (header and body, unpadded).
    pub len: u32,
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHeader {
    pub body_len: u32,
    pub addr: u64,
    pub chunk: ChunkHeader,
    pub codec: Codec,
    pub crc: u32,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// The file header of segment `segment`.
pub(crate) fn file_header(segment: u64) -> [u8; FILE_HEADER] {
    let mut h = [0u8; FILE_HEADER];
    h[..8].copy_from_slice(FILE_MAGIC);
    h[8..].copy_from_slice(&segment.to_le_bytes());
    h
}

/// Whether `bytes` start with a version-2 file header (of any segment).
pub(crate) fn is_framed(bytes: &[u8]) -> bool {
    bytes.len() >= FILE_HEADER && &bytes[..8] == FILE_MAGIC
}

impl FrameHeader {
    /// Appends a frame (header, body, zero padding to 8 bytes) to `out`;
    /// the body is `body` as encoded with `codec`.
    pub(crate) fn append(
        out: &mut Vec<u8>,
        addr: u64,
        chunk: &ChunkHeader,
        codec: Codec,
        body: &[u8],
    ) {
        let start = out.len();
        out.extend_from_slice(&FRAME_MAGIC.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&addr.to_le_bytes());
        out.extend_from_slice(&chunk.source.to_le_bytes());
        out.extend_from_slice(&chunk.prev.to_le_bytes());
        out.extend_from_slice(&chunk.first_ts.to_le_bytes());
        out.extend_from_slice(&chunk.last_ts.to_le_bytes());
        out.extend_from_slice(&chunk.count.to_le_bytes());
        out.extend_from_slice(&chunk.len.to_le_bytes());
        out.extend_from_slice(&chunk.crc.to_le_bytes());
        out.extend_from_slice(&[codec as u8, 0, 0, 0]);
        let crc = crc32c::crc32c_append(crc32c::crc32c(&out[start..start + 64]), body);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(body);
        out.resize(start + padded(FRAME_HEADER + body.len()), 0);
    }

    /// Reads a frame header; `Ok(None)` for a zero word (no more frames),
    /// `Err` for anything else that is not a frame.
    pub(crate) fn read(b: &[u8], max_chunk: usize) -> Result<Option<FrameHeader>, String> {
        if b.len() < 4 {
            return Err(format!("{} bytes left, less than a frame header", b.len()));
        }
        let magic = u32_at(b, 0);
        if magic == 0 {
            return Ok(None);
        }
        if magic != FRAME_MAGIC {
            return Err(format!("bad frame magic {magic:#010x}"));
        }
        if b.len() < FRAME_HEADER {
            return Err(format!("frame header cut off after {} bytes", b.len()));
        }
        let chunk = ChunkHeader {
            len: u32_at(b, 52),
            source: u64_at(b, 16),
            prev: u64_at(b, 24),
            first_ts: u64_at(b, 32),
            last_ts: u64_at(b, 40),
            count: u32_at(b, 48),
            crc: u32_at(b, 56),
        };
        let codec = Codec::from_byte(b[60]).ok_or_else(|| format!("unknown codec {}", b[60]))?;
        let h = FrameHeader {
            body_len: u32_at(b, 4),
            addr: u64_at(b, 8),
            chunk,
            codec,
            crc: u32_at(b, 64),
        };
        let len = h.chunk.len as usize;
        if len <= HEADER_LEN || len > max_chunk {
            return Err(format!(
                "chunk length {len} outside {}..={max_chunk}",
                HEADER_LEN + 1
            ));
        }
        if h.body_len as usize > len - HEADER_LEN {
            return Err(format!(
                "body of {} bytes larger than its {} byte payload",
                h.body_len,
                len - HEADER_LEN
            ));
        }
        if h.chunk.count == 0 {
            return Err("frame of zero records".into());
        }
        if h.chunk.last_ts < h.chunk.first_ts {
            return Err(format!(
                "last timestamp {} before first {}",
                h.chunk.last_ts, h.chunk.first_ts
            ));
        }
        Ok(Some(h))
    }

    /// Frame bytes, header and body, unpadded.
    pub(crate) fn frame_len(&self) -> usize {
        FRAME_HEADER + self.body_len as usize
    }

    /// Checks the frame checksum over `frame` (the frame's bytes from its
    /// header on).
    pub(crate) fn verify(&self, frame: &[u8]) -> Result<(), String> {
        let len = self.frame_len();
        let f = frame
            .get(..len)
            .ok_or_else(|| format!("frame of {len} bytes cut off after {}", frame.len()))?;
        let crc = crc32c::crc32c_append(crc32c::crc32c(&f[..64]), &f[FRAME_HEADER..]);
        if crc != self.crc {
            return Err(format!(
                "frame checksum mismatch (stored {:#010x}, computed {crc:#010x})",
                self.crc
            ));
        }
        Ok(())
    }

    /// Decodes a verified frame into the chunk it was made from (header and
    /// payload, as in a block), checked against the chunk's own checksum.
    pub(crate) fn decode(&self, frame: &[u8]) -> Result<Vec<u8>, String> {
        let body = frame
            .get(FRAME_HEADER..self.frame_len())
            .ok_or("frame body cut off")?;
        let payload_len = self.chunk.len as usize - HEADER_LEN;
        // The payload is rebuilt in place after room for the header: one
        // buffer, no copy.
        let mut chunk = Vec::with_capacity(HEADER_LEN + payload_len);
        chunk.resize(HEADER_LEN, 0);
        codec::decode_into(self.codec, body, payload_len, self.chunk.count, &mut chunk)?;
        let (head, payload) = chunk.split_at_mut(HEADER_LEN);
        let crc = self.chunk.write(head, payload);
        if crc != self.chunk.crc {
            return Err(format!(
                "decoded chunk checksum mismatch (stored {:#010x}, computed {crc:#010x})",
                self.chunk.crc
            ));
        }
        Ok(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::codec::Encoder;
    use crate::log::record::encode;

    #[test]
    fn frame_round_trip_and_damage_is_found() {
        let mut payload = vec![0u8; 4096];
        let mut n = 0;
        for i in 0..100u64 {
            n += encode(&mut payload[n..], u64::from(i > 0), &(i % 7).to_le_bytes());
        }
        payload.truncate(n);
        let mut chunk = ChunkHeader {
            len: (HEADER_LEN + n) as u32,
            source: 9,
            prev: 4096,
            first_ts: 50,
            last_ts: 149,
            count: 100,
            crc: 0,
        };
        let mut raw = vec![0u8; HEADER_LEN];
        chunk.crc = chunk.write(&mut raw, &payload);
        raw.extend_from_slice(&payload);
        let mut body = Vec::new();
        let codec = Encoder::new(Some(3)).encode(&payload, 50, 100, &mut body);
        let mut f = Vec::new();
        FrameHeader::append(&mut f, 8192, &chunk, codec, &body);
        assert_eq!(f.len() % 8, 0);
        let h = FrameHeader::read(&f, 1 << 16).ok().flatten();
        let h = h.expect("a frame");
        assert_eq!((h.addr, h.chunk, h.codec), (8192, chunk, codec));
        assert!(h.verify(&f).is_ok());
        assert_eq!(h.decode(&f).as_deref(), Ok(&raw[..]));
        f[FRAME_HEADER + 2] ^= 4;
        assert!(h.verify(&f).is_err());
        assert!(FrameHeader::read(&[0; 8], 1 << 16).is_ok_and(|h| h.is_none()));
    }
}
