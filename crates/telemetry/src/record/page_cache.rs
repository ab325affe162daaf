//! Page-cache insertions (`PageCache`).

use super::{check_len, u32_at, u64_at, Kind};
use crate::DecodeError;

/// One page inserted into the page cache.
///
/// Encoding (44 bytes, little endian):
/// `pid u32 | tid u32 | timestamp_us u64 | pfn u64 | inode u64 | index u64 | device u32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageCache {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time of the insertion, µs.
    pub timestamp_us: u64,
    /// Page frame number.
    pub pfn: u64,
    /// Inode of the file the page belongs to.
    pub inode: u64,
    /// Page index within the file.
    pub index: u64,
    /// Device number of the file system.
    pub device: u32,
}

impl PageCache {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 44;

    /// Appends the 44-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.timestamp_us.to_le_bytes());
        out.extend_from_slice(&self.pfn.to_le_bytes());
        out.extend_from_slice(&self.inode.to_le_bytes());
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&self.device.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<PageCache, DecodeError> {
        check_len(Kind::PageCache, b)?;
        Ok(PageCache {
            pid: u32_at(b, 0),
            tid: u32_at(b, 4),
            timestamp_us: u64_at(b, 8),
            pfn: u64_at(b, 16),
            inode: u64_at(b, 24),
            index: u64_at(b, 32),
            device: u32_at(b, 40),
        })
    }

    /// Index value of a page-cache event: always 0 (page-cache queries only count,
    /// so a single bin suffices).
    pub fn index_value(_b: &[u8]) -> u64 {
        0
    }
}
