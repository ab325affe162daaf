//! Per-source chunk directory: the time index.
//!
//! Every sealed chunk of a source gets one `ChunkEntry` (address, time span,
//! record count), appended in time order, so a binary search over them jumps
//! straight to the chunks of a window. Range-index summaries live beside it,
//! built by the indexer thread (`indexer.rs`) under the same chunk numbers.
//!
//! The entries of older segments need not stay in memory: their segment
//! index files (footer written) list them. The writer pages a source's
//! entries of such a segment out ([`Directory::page_out_through`]), keeping
//! one [`PagedRun`] per (source, segment): where its chunk numbers start,
//! its first entry whole, and the bounds a binary search needs (last
//! address, largest `last_ts`, last `first_ts`, records). A search first
//! finds the run that holds its answer from these alone and pages in at
//! most that run's entries (`paged.rs`, under the index cache's budget);
//! answers are the same as with every entry in memory.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::index::paged::SummaryPages;
use crate::log::append_vec::{AppendVec, AppendView};

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

/// What stays in memory of one source's entries of one paged-out segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PagedRun {
    pub segment: u64,
    /// Chunk number of its first entry.
    pub first_chunk: usize,
    /// Entries (chunks) in it.
    pub chunks: usize,
    /// Records in its chunks.
    pub records: u64,
    /// Its first entry (so the first chunk of a segment, where retention
    /// and most searches land, needs no paging in).
    pub first: ChunkEntry,
    pub last_addr: u64,
    /// Largest `last_ts` of its chunks.
    pub max_last_ts: u64,
    /// `first_ts` of its last chunk.
    pub last_first_ts: u64,
}

impl PagedRun {
    fn end_chunk(&self) -> usize {
        self.first_chunk + self.chunks
    }

    /// The run of `entries` (chunk numbers from `first_chunk` on, all in
    /// `segment`), `None` when empty.
    pub(crate) fn of(segment: u64, first_chunk: usize, entries: &[ChunkEntry]) -> Option<Self> {
        let first = *entries.first()?;
        let last = entries.last()?;
        Some(PagedRun {
            segment,
            first_chunk,
            chunks: entries.len(),
            records: entries.iter().map(|c| u64::from(c.count)).sum(),
            first,
            last_addr: last.addr,
            max_last_ts: entries.iter().map(|c| c.last_ts).max().unwrap_or(0),
            last_first_ts: last.first_ts,
        })
    }
}

/// Bytes one in-memory entry takes.
pub(crate) const ENTRY_BYTES: usize = std::mem::size_of::<ChunkEntry>();
/// Bytes one paged-out run keeps in memory.
pub(crate) const RUN_BYTES: usize = std::mem::size_of::<PagedRun>();

/// A reader's view of a source's directory. Entries come by value: from
/// memory, or paged in from a segment index file (which can fail: an I/O
/// error or a file that no longer matches is an error, never a wrong
/// answer).
#[derive(Clone)]
pub(crate) struct DirectoryView {
    runs: Arc<Vec<PagedRun>>,
    chunks: AppendView<ChunkEntry>,
    /// Chunk number of `chunks[0]`.
    base: usize,
    /// Chunks below this are in `runs` (`chunks` may still hold some of
    /// them until the writer compacts it; they are not read).
    paged_below: usize,
    /// First chunk retention has not dropped.
    pub start: usize,
    /// Where paged-out entries are read from, and the source's id there.
    pages: Option<Arc<SummaryPages>>,
    source: u64,
}

/// The writer's side of a source's directory.
pub(crate) struct Directory {
    /// Paged-out segments' runs, oldest first, all below `base`.
    runs: Arc<Vec<PagedRun>>,
    /// Entries in memory: chunk numbers from `base` on; those below
    /// `paged_below` are paged out and freed by the next `compact`.
    chunks: AppendVec<ChunkEntry>,
    base: usize,
    paged_below: usize,
    /// `(segment, first chunk number in it)` of every segment with
    /// entries in memory, oldest first.
    marks: VecDeque<(u64, usize)>,
}

impl Directory {
    pub(crate) fn new() -> Self {
        Directory {
            runs: Arc::new(Vec::new()),
            chunks: AppendVec::new(PAGE),
            base: 0,
            paged_below: 0,
            marks: VecDeque::new(),
        }
    }

    /// The number of the next chunk.
    pub(crate) fn len(&self) -> usize {
        self.base + self.chunks.len()
    }

    /// Appends the entry of the next chunk, in segment `segment`.
    pub(crate) fn push(&mut self, entry: ChunkEntry, segment: u64) {
        if self.marks.back().is_none_or(|m| m.0 < segment) {
            self.marks.push_back((segment, self.len()));
        }
        self.chunks.push(entry);
    }

    /// Bytes the directory holds in memory once compacted (entries and
    /// runs).
    pub(crate) fn held_bytes(&self) -> usize {
        let below = self.paged_below.saturating_sub(self.base);
        self.chunks.held().saturating_sub(below) * ENTRY_BYTES + self.runs.len() * RUN_BYTES
    }

    /// The oldest segment whose entries are in memory.
    pub(crate) fn oldest_segment(&self) -> Option<u64> {
        self.marks.front().map(|m| m.0)
    }

    /// This source's in-memory entries of its oldest segment in memory, if
    /// that is `segment`.
    pub(crate) fn entries_of(&self, segment: u64) -> Option<Vec<ChunkEntry>> {
        let (range, _) = self.oldest_range(segment)?;
        Some(
            range
                .filter_map(|i| self.chunks.get(i.checked_sub(self.base)?))
                .collect(),
        )
    }

    fn oldest_range(&self, segment: u64) -> Option<(std::ops::Range<usize>, u64)> {
        let &(seg, from) = self.marks.front()?;
        if seg != segment {
            return None;
        }
        let to = self.marks.get(1).map_or(self.len(), |m| m.1);
        Some((from..to, seg))
    }

    /// Pages out this source's entries of `segment`, its oldest segment in
    /// memory (its index file lists them: the caller checked): a run
    /// replaces them, and [`Self::compact`] frees them (once after paging
    /// out many segments: each compaction copies the entries kept).
    /// Returns whether it did.
    pub(crate) fn page_out(&mut self, segment: u64) -> bool {
        let Some(entries) = self.entries_of(segment) else {
            return false;
        };
        let Some((range, _)) = self.oldest_range(segment) else {
            return false;
        };
        let Some(run) = PagedRun::of(segment, range.start, &entries) else {
            return false;
        };
        if entries.len() != range.len() {
            // Some were freed already (retention): nothing to page.
            return false;
        }
        Arc::make_mut(&mut self.runs).push(run);
        self.marks.pop_front();
        self.paged_below = range.end;
        true
    }

    /// Frees the entries paged out: starts the in-memory entries again at
    /// the first chunk not paged out (copying those from there on: the
    /// segments not paged out, few), so all of their memory is freed, not
    /// only whole slabs.
    pub(crate) fn compact(&mut self) {
        let chunk = self.paged_below;
        if chunk <= self.base {
            return;
        }
        let mut chunks = AppendVec::new(PAGE);
        for i in chunk..self.len() {
            if let Some(c) = self.chunks.get(i - self.base) {
                chunks.push(c);
            }
        }
        self.chunks = chunks;
        self.base = chunk;
    }

    /// Frees the entries and runs of chunks below log address
    /// `retained_from`; returns the first retained chunk's number.
    pub(crate) fn forget_below(&mut self, retained_from: u64) -> usize {
        let first = self.view(retained_from, None, 0).start;
        let gone = self.runs.partition_point(|r| r.end_chunk() <= first);
        if gone > 0 {
            Arc::make_mut(&mut self.runs).drain(..gone);
        }
        while self.marks.len() > 1 && self.marks.get(1).is_some_and(|m| m.1 <= first) {
            self.marks.pop_front();
        }
        // Dropped chunks read as absent (below `paged_below`, in no run);
        // compacting frees their entries exactly, not in whole slabs.
        self.paged_below = self.paged_below.max(first.min(self.len()));
        self.compact();
        first
    }

    /// A view without the chunks below log address `retained_from`, paging
    /// from `pages` (source id `source` there).
    pub(crate) fn view(
        &self,
        retained_from: u64,
        pages: Option<&Arc<SummaryPages>>,
        source: u64,
    ) -> DirectoryView {
        let mut v = DirectoryView {
            runs: Arc::clone(&self.runs),
            chunks: self.chunks.view(),
            base: self.base,
            paged_below: self.paged_below.max(self.base),
            start: 0,
            pages: pages.cloned(),
            source,
        };
        if retained_from > 0 {
            // Retention drops whole segments and runs are per segment, so
            // the answer is a run's first chunk or in memory: nothing is
            // paged in (a failure would keep more chunks, never fewer).
            v.start = v
                .partition(|r| r.last_addr < retained_from, |c| c.addr < retained_from)
                .unwrap_or_else(|_| {
                    let r = v.runs.partition_point(|r| r.last_addr < retained_from);
                    v.runs.get(r).map_or(v.paged_below, |r| r.first_chunk)
                });
        }
        v
    }
}

/// Walks a range of chunks' entries as [`DirectoryView::get`] gives them,
/// keeping the paged-out run it is in: a window over an hour of a busy
/// series meets ~300 000 chunks, and searching the runs and looking the
/// run's page up again for each was most of finding a chunk's entry.
pub(crate) struct Entries<'a> {
    dir: &'a DirectoryView,
    next: usize,
    end: usize,
    /// The paged-out run last met: its chunk numbers and entries.
    run: Option<(std::ops::Range<usize>, Arc<Vec<ChunkEntry>>)>,
}

impl Entries<'_> {
    /// The next chunk's number and entry; `None` past the range or where
    /// `get` gives none.
    pub(crate) fn next_entry(&mut self) -> Result<Option<(usize, ChunkEntry)>> {
        let i = self.next;
        if i >= self.end {
            return Ok(None);
        }
        self.next += 1;
        if i >= self.dir.paged_below {
            return Ok(self.dir.chunks.get(i - self.dir.base).map(|c| (i, c)));
        }
        if let Some((chunks, page)) = &self.run {
            if chunks.contains(&i) && i != chunks.start {
                return Ok(page.get(i - chunks.start).map(|&c| (i, c)));
            }
        }
        let runs = &self.dir.runs;
        let r = runs.partition_point(|r| r.end_chunk() <= i);
        let Some(run) = runs.get(r).filter(|r| r.first_chunk <= i) else {
            return Ok(None);
        };
        if i == run.first_chunk {
            return Ok(Some((i, run.first)));
        }
        let page = self.dir.page(run)?;
        let entry = page.get(i - run.first_chunk).map(|&c| (i, c));
        self.run = Some((run.first_chunk..run.end_chunk(), page));
        Ok(entry)
    }
}

impl DirectoryView {
    /// The number of the next chunk: chunk numbers are `start..len()`.
    pub(crate) fn len(&self) -> usize {
        self.base + self.chunks.len()
    }

    /// Entries held in memory (not paged out).
    pub(crate) fn held_entries(&self) -> usize {
        let first = (self.chunks.first() + self.base).max(self.paged_below);
        self.len().saturating_sub(first)
    }

    /// Bytes held in memory (entries and runs).
    pub(crate) fn held_bytes(&self) -> usize {
        self.held_entries() * ENTRY_BYTES + self.runs.len() * RUN_BYTES
    }

    /// The entry of chunk `i`, `None` when retention freed it or it is not
    /// sealed; paged in from its segment index file when paged out.
    pub(crate) fn get(&self, i: usize) -> Result<Option<ChunkEntry>> {
        if i >= self.paged_below {
            return Ok(self.chunks.get(i - self.base));
        }
        let r = self.runs.partition_point(|r| r.end_chunk() <= i);
        let Some(run) = self.runs.get(r).filter(|r| r.first_chunk <= i) else {
            return Ok(None);
        };
        if i == run.first_chunk {
            return Ok(Some(run.first));
        }
        let entries = self.page(run)?;
        Ok(entries.get(i - run.first_chunk).copied())
    }

    /// A cursor over the entries of chunks `range`, in order.
    pub(crate) fn entries(&self, range: std::ops::Range<usize>) -> Entries<'_> {
        Entries {
            dir: self,
            next: range.start,
            end: range.end,
            run: None,
        }
    }

    fn page(&self, run: &PagedRun) -> Result<Arc<Vec<ChunkEntry>>> {
        let pages = self.pages.as_ref().ok_or_else(|| {
            Error::corrupted(
                run.first.addr,
                "directory entries paged out with no index files",
            )
        })?;
        pages.chunk_entries(self.source, run)
    }

    /// The first chunk number `i` (from the first entry held on) for which
    /// `pred` is false, `pred` being true on a prefix of the chunks;
    /// `run_all(run)` must say whether `pred` holds for every chunk of a
    /// paged-out run (from its bounds alone). Pages in at most one run.
    fn partition(
        &self,
        run_all: impl Fn(&PagedRun) -> bool,
        mut pred: impl FnMut(&ChunkEntry) -> bool,
    ) -> Result<usize> {
        let r = self.runs.partition_point(&run_all);
        let Some(run) = self.runs.get(r) else {
            // Every run's chunks meet `pred`, so the entries in memory
            // that are also in a run (not compacted yet) do too.
            return Ok(self.base + self.chunks.partition_point(pred));
        };
        if !pred(&run.first) {
            return Ok(run.first_chunk);
        }
        let entries = self.page(run)?;
        Ok(run.first_chunk + entries.partition_point(pred))
    }

    /// Chunk numbers of the chunks whose time span meets `[t0, t1]`.
    pub(crate) fn overlapping(&self, t0: u64, t1: u64) -> Result<std::ops::Range<usize>> {
        let start = self
            .partition(|r| r.max_last_ts < t0, |c| c.last_ts < t0)?
            .max(self.start);
        let end = self.partition(|r| r.last_first_ts <= t1, |c| c.first_ts <= t1)?;
        Ok(start..end.max(start))
    }

    /// Records in chunks `range` (from the runs' counts where a run lies
    /// wholly inside: only the runs at its ends are paged in).
    pub(crate) fn records_in(&self, range: std::ops::Range<usize>) -> Result<u64> {
        let mut n = 0u64;
        let mut i = range.start;
        while i < range.end {
            if i < self.paged_below {
                let r = self.runs.partition_point(|r| r.end_chunk() <= i);
                if let Some(run) = self.runs.get(r).filter(|r| r.first_chunk <= i) {
                    if i == run.first_chunk && run.end_chunk() <= range.end {
                        n += run.records;
                        i = run.end_chunk();
                        continue;
                    }
                }
            }
            n += self.get(i)?.map_or(0, |c| u64::from(c.count));
            i += 1;
        }
        Ok(n)
    }

    /// The first chunk at log address `addr` or above (not below `start`).
    pub(crate) fn at_or_after(&self, addr: u64) -> Result<usize> {
        Ok(self
            .partition(|r| r.last_addr < addr, |c| c.addr < addr)?
            .max(self.start))
    }

    /// The chunk holding the source's record number `seq`, or `len()` when
    /// no sealed chunk does (it is in the open chunk).
    pub(crate) fn holding_seq(&self, seq: u64) -> Result<usize> {
        self.partition(
            |r| r.first.first_seq + r.records <= seq,
            |c| c.first_seq + u64::from(c.count) <= seq,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: u64) -> ChunkEntry {
        ChunkEntry {
            addr: i * 100,
            first_ts: i * 10,
            last_ts: i * 10 + 5,
            first_seq: i * 3,
            count: 3,
            len: 64,
        }
    }

    #[test]
    fn paging_out_keeps_runs_and_frees_entries() {
        let mut d = Directory::new();
        for i in 0..10 {
            d.push(entry(i), i / 4);
        }
        assert_eq!(d.oldest_segment(), Some(0));
        assert!(!d.page_out(1));
        assert!(d.page_out(0));
        // Paged out before compacting: read from the run already.
        assert!(d.view(0, None, 1).get(1).is_err());
        d.compact();
        assert_eq!(d.oldest_segment(), Some(1));
        assert_eq!(d.held_bytes(), 6 * ENTRY_BYTES + RUN_BYTES);
        let v = d.view(0, None, 1);
        assert_eq!(v.len(), 10);
        // A run's first entry and everything in memory need no pages.
        assert_eq!(v.get(0).unwrap(), Some(entry(0)));
        assert_eq!(v.get(5).unwrap(), Some(entry(5)));
        assert!(v.get(1).is_err());
        // Searches answered from the run's bounds.
        assert_eq!(v.overlapping(42, 60).unwrap(), 4..7);
        assert_eq!(v.at_or_after(400).unwrap(), 4);
        assert_eq!(v.holding_seq(13).unwrap(), 4);
        assert_eq!(v.holding_seq(30).unwrap(), 10);
        assert_eq!(d.forget_below(400), 4);
        assert_eq!(d.view(400, None, 1).start, 4);
    }
}
