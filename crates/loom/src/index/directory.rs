//! Per-source chunk directory: the time index.
//!
//! Every sealed chunk of a source gets one `ChunkEntry` (address, time span,
//! record count), appended in time order, so a binary search over them jumps
//! straight to the chunks of a window. Range-index summaries live beside it,
//! built by the indexer thread (`indexer.rs`) under the same chunk numbers.

use crate::log::slab::{AppendVec, AppendView};

/// Directory entries per slab page.
const PAGE: usize = 4096;

/// One sealed chunk of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkEntry {
    pub addr: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    pub first_seq: u64,
    pub count: u32,
    /// Bytes of the chunk uncompressed (header and payload, unpadded).
    pub len: u32,
}

/// A reader's view of a source's directory.
#[derive(Clone)]
pub(crate) struct DirectoryView {
    pub chunks: AppendView<ChunkEntry>,
    /// First chunk retention has not dropped.
    pub start: usize,
}

/// The writer's side of a source's directory.
pub(crate) struct Directory {
    pub chunks: AppendVec<ChunkEntry>,
}

impl Directory {
    pub(crate) fn new() -> Self {
        Directory {
            chunks: AppendVec::new(PAGE),
        }
    }

    /// Frees the entries of chunks below log address `retained_from`
    /// (whole slabs); returns the first retained chunk's number.
    pub(crate) fn forget_below(&mut self, retained_from: u64) -> usize {
        let first = self.view(retained_from).start;
        self.chunks.drop_below(first);
        first
    }

    /// A view without the chunks below log address `retained_from`.
    pub(crate) fn view(&self, retained_from: u64) -> DirectoryView {
        let chunks = self.chunks.view();
        let start = if retained_from == 0 {
            0
        } else {
            chunks.partition_point(|c| c.addr < retained_from)
        };
        DirectoryView { chunks, start }
    }
}

impl DirectoryView {
    /// Chunk numbers of the chunks whose time span meets `[t0, t1]`.
    pub(crate) fn overlapping(&self, t0: u64, t1: u64) -> std::ops::Range<usize> {
        let start = self
            .chunks
            .partition_point(|c| c.last_ts < t0)
            .max(self.start);
        let end = self.chunks.partition_point(|c| c.first_ts <= t1);
        start..end.max(start)
    }
}
