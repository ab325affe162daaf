//! The chunk: the unit of storage, indexing and reading.
//!
//! A chunk holds records of one source. On disk and in blocks it is a 48-byte
//! header followed by the encoded records, padded to 8 bytes:
//!
//! | offset | field | meaning |
//! | --- | --- | --- |
//! | 0 | magic u32 | `CHUNK_MAGIC`; a zero word means "rest of the block is empty" |
//! | 4 | len u32 | header + payload bytes, before padding |
//! | 8 | source u64 | source id |
//! | 16 | prev u64 | log address of the source's previous chunk, `NO_CHUNK` if none |
//! | 24 | first_ts u64 | timestamp of the first record |
//! | 32 | last_ts u64 | timestamp of the last record |
//! | 40 | count u32 | records in the chunk |
//! | 44 | crc u32 | CRC-32C of bytes 0..44 and the payload |
//!
//! All integers are little-endian. The backward `prev` link lets a reader walk
//! one source's history without any index (the "no index" ablation).

/// Marks the start of a chunk (recovery also searches for it to resume
/// after a corrupt chunk).
pub(crate) const CHUNK_MAGIC: u32 = 0x4d4f_4f4c; // "LOOM" in little-endian bytes
/// Bytes of the chunk header.
pub(crate) const HEADER_LEN: usize = 48;
/// `prev` value of a source's first chunk.
pub(crate) const NO_CHUNK: u64 = u64::MAX;

/// Decoded chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkHeader {
    pub len: u32,
    pub source: u64,
    pub prev: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    pub count: u32,
    pub crc: u32,
}

/// Rounds a chunk length up to its footprint in a block.
#[inline]
pub(crate) fn padded(len: usize) -> usize {
    (len + 7) & !7
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

impl ChunkHeader {
    /// Writes the header (with its checksum computed over `payload`) into
    /// `out[..HEADER_LEN]`; returns the checksum.
    pub(crate) fn write(&self, out: &mut [u8], payload: &[u8]) -> u32 {
        out[0..4].copy_from_slice(&CHUNK_MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&self.len.to_le_bytes());
        out[8..16].copy_from_slice(&self.source.to_le_bytes());
        out[16..24].copy_from_slice(&self.prev.to_le_bytes());
        out[24..32].copy_from_slice(&self.first_ts.to_le_bytes());
        out[32..40].copy_from_slice(&self.last_ts.to_le_bytes());
        out[40..44].copy_from_slice(&self.count.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&out[0..44]), payload);
        out[44..48].copy_from_slice(&crc.to_le_bytes());
        crc
    }

    /// Reads a header; `Ok(None)` for an empty (zero) word, `Err` for anything
    /// that is neither a chunk nor empty.
    pub(crate) fn read(b: &[u8]) -> Result<Option<ChunkHeader>, String> {
        if b.len() < 4 {
            return Err(format!("{} bytes left, less than a chunk header", b.len()));
        }
        let magic = u32_at(b, 0);
        if magic == 0 {
            return Ok(None);
        }
        if magic != CHUNK_MAGIC {
            return Err(format!("bad chunk magic {magic:#010x}"));
        }
        if b.len() < HEADER_LEN {
            return Err(format!("chunk header cut off after {} bytes", b.len()));
        }
        Ok(Some(ChunkHeader {
            len: u32_at(b, 4),
            source: u64_at(b, 8),
            prev: u64_at(b, 16),
            first_ts: u64_at(b, 24),
            last_ts: u64_at(b, 32),
            count: u32_at(b, 40),
            crc: u32_at(b, 44),
        }))
    }

    /// Checks the header's own consistency and the checksum over `chunk`
    /// (the whole chunk, header included, unpadded).
    pub(crate) fn verify(&self, chunk: &[u8], max_len: usize) -> Result<(), String> {
        let len = self.len as usize;
        if len < HEADER_LEN || len > max_len {
            return Err(format!(
                "chunk length {len} outside {HEADER_LEN}..={max_len}"
            ));
        }
        if chunk.len() < len {
            return Err(format!(
                "chunk of {len} bytes cut off after {}",
                chunk.len()
            ));
        }
        if self.last_ts < self.first_ts {
            return Err(format!(
                "last timestamp {} before first {}",
                self.last_ts, self.first_ts
            ));
        }
        let crc = crc32c::crc32c_append(crc32c::crc32c(&chunk[0..44]), &chunk[HEADER_LEN..len]);
        if crc != self.crc {
            return Err(format!(
                "checksum mismatch (stored {:#010x}, computed {crc:#010x})",
                self.crc
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_checksum() {
        let payload = b"hello records";
        let h = ChunkHeader {
            len: (HEADER_LEN + payload.len()) as u32,
            source: 7,
            prev: NO_CHUNK,
            first_ts: 10,
            last_ts: 20,
            count: 1,
            crc: 0,
        };
        let mut buf = vec![0u8; HEADER_LEN + payload.len()];
        h.write(&mut buf, payload);
        buf[HEADER_LEN..].copy_from_slice(payload);
        let back = ChunkHeader::read(&buf)
            .ok()
            .flatten()
            .map(|x| ChunkHeader { crc: 0, ..x });
        assert_eq!(back, Some(h));
        let full = ChunkHeader::read(&buf).ok().flatten();
        assert!(full.is_some_and(|f| f.verify(&buf, 1 << 20).is_ok()));
        buf[HEADER_LEN + 3] ^= 1;
        assert!(full.is_some_and(|f| f.verify(&buf, 1 << 20).is_err()));
    }
}
