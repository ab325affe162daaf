//! Per-source chunk directory: the time index and the range index.
//!
//! Every sealed chunk of a source gets one `ChunkEntry` (address, time span,
//! record count) and, with a range index, one `BinSummary` per non-empty bin.
//! Entries are appended in time order, so a binary search over them is the time
//! index: a query jumps straight to the chunks of its window.

use crate::index::bins::BinSummary;
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
    pub bins_start: u64,
    pub count: u32,
    pub bins_len: u32,
}

/// The writer's side of a source's directory.
pub(crate) struct Directory {
    pub chunks: AppendVec<ChunkEntry>,
    pub bins: AppendVec<BinSummary>,
}

/// A reader's view of a source's directory.
#[derive(Clone)]
pub(crate) struct DirectoryView {
    pub chunks: AppendView<ChunkEntry>,
    pub bins: AppendView<BinSummary>,
}

impl Directory {
    pub(crate) fn new() -> Self {
        Directory {
            chunks: AppendVec::new(PAGE),
            bins: AppendVec::new(PAGE),
        }
    }

    pub(crate) fn view(&self) -> DirectoryView {
        DirectoryView {
            chunks: self.chunks.view(),
            bins: self.bins.view(),
        }
    }
}

impl DirectoryView {
    /// Index range of the chunks whose time span meets `[t0, t1]`.
    pub(crate) fn overlapping(&self, t0: u64, t1: u64) -> std::ops::Range<usize> {
        let start = self.chunks.partition_point(|c| c.last_ts < t0);
        let end = self.chunks.partition_point(|c| c.first_ts <= t1);
        start..end.max(start)
    }

    /// The bin summaries of one chunk.
    pub(crate) fn bins_of(&self, c: &ChunkEntry) -> impl Iterator<Item = BinSummary> + '_ {
        (c.bins_start..c.bins_start + u64::from(c.bins_len))
            .filter_map(move |i| self.bins.get(i as usize))
    }
}
