//! Range-index summaries as readers see them, and how one chunk is
//! summarised (shared by the indexer thread and recovery).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::bin_summary::BinSummary;
use crate::index::compact::{BinCount, ChunkTotal};
use crate::index::paged::{PagedBins, SummaryPages, SUMMARY_BYTES};
use crate::log::append_vec::{AppendVec, AppendView};

/// Entries per slab page of the summary logs. Retention frees whole
/// slabs, so a source holds up to a slab more than it keeps (1024 bin
/// summaries: 48 KiB; paging out frees everything, see `restart_at`).
const PAGE: usize = 1024;

/// Where one chunk's summaries sit in its source's `bins` log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BinSpan {
    pub start: u64,
    pub len: u32,
}

/// One source's summaries, chunk by chunk (chunk number = `span_base` +
/// position in `spans`), owned by the indexer thread. Chunks below
/// `paged_below`, and chunks whose span is [`BinSpan::PAGED`], have their
/// summaries in their segment's index file only (`paged.rs`).
pub(crate) struct SourceSummaries {
    spans: AppendVec<BinSpan>,
    bins: AppendVec<BinSummary>,
    /// `bins`' bins and counts, and each chunk's total (`spans`' order):
    /// the compact copies a window's first pass reads (`index::compact`).
    counts: AppendVec<BinCount>,
    totals: AppendVec<ChunkTotal>,
    /// Chunk number of `spans[0]`: paging out frees whole slabs in place,
    /// and starts the vectors again at the first chunk kept (moving this)
    /// only for a source whose partly freed slabs would hold more than it
    /// keeps.
    span_base: usize,
    /// Bin number (`BinSpan::start`) of `bins[0]`.
    bin_base: u64,
    /// Chunks below this are paged out (their spans and bins freed).
    pub paged_below: usize,
    /// `(segment, first chunk number in it)` of every segment from
    /// `paged_below` on, for paging out whole segments; `segment_size`
    /// 0 keeps none (summaries that are never paged).
    marks: VecDeque<(u64, usize)>,
    segment_size: u64,
}

impl BinSpan {
    /// A chunk whose summaries are not known (below where indexing began).
    const UNKNOWN: BinSpan = BinSpan {
        start: 0,
        len: u32::MAX,
    };
    /// A chunk whose summaries are in its segment index file, not in memory.
    const PAGED: BinSpan = BinSpan {
        start: 0,
        len: u32::MAX - 1,
    };

    /// Whether its summaries are in memory.
    fn in_memory(&self) -> bool {
        *self != BinSpan::UNKNOWN && *self != BinSpan::PAGED
    }
}

impl SourceSummaries {
    /// Empty summaries; with a non-zero `segment_size` they can be paged
    /// out segment by segment (their index files hold them: declared
    /// fields only, see `IndexState::persistable`).
    pub(crate) fn new(segment_size: u64) -> Self {
        SourceSummaries {
            spans: AppendVec::new(PAGE),
            bins: AppendVec::new(PAGE),
            counts: AppendVec::new(PAGE),
            totals: AppendVec::new(PAGE),
            span_base: 0,
            bin_base: 0,
            paged_below: 0,
            marks: VecDeque::new(),
            segment_size,
        }
    }

    /// Summaries that begin at chunk `first_chunk` (a source whose older
    /// chunks retention already dropped); earlier chunks read as unknown.
    pub(crate) fn starting_at(first_chunk: usize, segment_size: u64) -> Self {
        SourceSummaries {
            span_base: first_chunk,
            ..Self::new(segment_size)
        }
    }

    /// The number of the next chunk to push.
    pub(crate) fn next_chunk(&self) -> usize {
        self.span_base + self.spans.len()
    }

    fn next_bin(&self) -> u64 {
        self.bin_base + self.bins.len() as u64
    }

    fn span(&self, chunk: usize) -> Option<BinSpan> {
        self.spans.get(chunk.checked_sub(self.span_base)?)
    }

    /// The first bin held in memory of the chunks from `chunk` on (the
    /// next bin when none is: paged and unknown chunks hold none).
    fn first_bin_from(&self, chunk: usize) -> u64 {
        (chunk.max(self.span_base)..self.next_chunk())
            .find_map(|i| self.span(i).filter(|s| s.in_memory()).map(|s| s.start))
            .unwrap_or(self.next_bin())
    }

    fn mark(&mut self, addr: u64) {
        if self.segment_size == 0 {
            return;
        }
        let seg = addr / self.segment_size;
        if self.marks.back().is_none_or(|m| m.0 < seg) {
            self.marks.push_back((seg, self.next_chunk()));
        }
    }

    /// Bytes these summaries hold in memory (spans and bin summaries).
    pub(crate) fn held_bytes(&self) -> usize {
        self.spans.held() * std::mem::size_of::<BinSpan>()
            + self.bins.held() * SUMMARY_BYTES
            + self.counts.held() * std::mem::size_of::<BinCount>()
            + self.totals.held() * std::mem::size_of::<ChunkTotal>()
    }

    /// The oldest segment whose summaries are still in memory.
    pub(crate) fn oldest_segment(&self) -> Option<u64> {
        self.marks.front().map(|m| m.0)
    }

    /// Pages out the summaries of every chunk in segments up to `segment`
    /// (whose index files are complete): their memory is freed and
    /// readers read them from the files.
    pub(crate) fn page_out_through(&mut self, segment: u64) {
        if self.segment_size == 0 {
            return;
        }
        let mut below = self.paged_below;
        while let Some(&(seg, _)) = self.marks.front() {
            if seg > segment {
                break;
            }
            self.marks.pop_front();
            below = self.marks.front().map_or(self.next_chunk(), |m| m.1);
        }
        if below > self.paged_below {
            // Whole slabs below `below` are freed in place. Copying what
            // is kept into new vectors frees the rest too, but costs what
            // is kept: done on every segment paged out, late in a paced
            // 60 s P2 run that copy (hundreds of MB of a busy source's
            // newer summaries, per segment) took more than half of the indexer's
            // time. So it is done only when what stays behind in partly
            // freed slabs (at most a slab per vector) outweighs what is
            // kept: a slow source, whose copy is then small.
            self.free_below(below);
            let waste = self.unfreed_below(below);
            if waste > self.held_bytes().saturating_sub(waste) {
                self.restart_at(below);
            }
            self.paged_below = below;
        }
    }

    /// Bytes held in memory for chunks below `chunk` (in slabs that also
    /// hold later chunks' summaries).
    fn unfreed_below(&self, chunk: usize) -> usize {
        let spans = chunk
            .saturating_sub(self.span_base)
            .saturating_sub(self.spans.first());
        let first_bin = self.first_bin_from(chunk).saturating_sub(self.bin_base) as usize;
        let bins = first_bin.saturating_sub(self.bins.first());
        spans * (std::mem::size_of::<BinSpan>() + std::mem::size_of::<ChunkTotal>())
            + bins * (SUMMARY_BYTES + std::mem::size_of::<BinCount>())
    }

    /// Starts the vectors again at chunk `chunk`, copying what memory holds
    /// from there on (the chunks of segments not complete yet: few), so the
    /// memory of every chunk below is freed, not only whole slabs.
    fn restart_at(&mut self, chunk: usize) {
        let first_bin = self.first_bin_from(chunk);
        let mut spans = AppendVec::new(PAGE);
        let mut totals = AppendVec::new(PAGE);
        for i in chunk..self.next_chunk() {
            spans.push(self.span(i).unwrap_or(BinSpan::UNKNOWN));
            let total = i
                .checked_sub(self.span_base)
                .and_then(|k| self.totals.get(k));
            totals.push(total.unwrap_or_else(|| ChunkTotal::of(&[])));
        }
        let mut bins = AppendVec::new(PAGE);
        let mut counts = AppendVec::new(PAGE);
        for b in first_bin..self.next_bin() {
            let i = (b - self.bin_base) as usize;
            bins.push(self.bins.get(i).unwrap_or_default());
            counts.push(self.counts.get(i).unwrap_or_default());
        }
        self.spans = spans;
        self.totals = totals;
        self.span_base = chunk;
        self.bins = bins;
        self.counts = counts;
        self.bin_base = first_bin;
    }

    /// Frees the summaries of chunks below `chunk` (retention dropped them).
    pub(crate) fn forget_below(&mut self, chunk: usize) {
        let chunk = chunk.min(self.next_chunk());
        while self.marks.len() > 1 && self.marks.get(1).is_some_and(|m| m.1 <= chunk) {
            self.marks.pop_front();
        }
        self.free_below(chunk);
    }

    /// Frees the spans and bins of chunks below `chunk` (whole slabs).
    fn free_below(&mut self, chunk: usize) {
        // Bins are pushed in chunk order, so the first bin still needed is
        // the first in-memory bin of the chunks from `chunk` on.
        let first_bin = self.first_bin_from(chunk);
        let first_bin = first_bin.saturating_sub(self.bin_base) as usize;
        self.bins.drop_below(first_bin);
        self.counts.drop_below(first_bin);
        let chunk = chunk.saturating_sub(self.span_base);
        self.spans.drop_below(chunk);
        self.totals.drop_below(chunk);
    }

    /// Appends the next chunk (at log address `addr`), whose summaries
    /// are in its segment index file only.
    pub(crate) fn push_paged(&mut self, addr: u64) {
        self.mark(addr);
        self.spans.push(BinSpan::PAGED);
        self.totals.push(ChunkTotal::of(&[]));
    }

    /// Appends the summaries of the next chunk (at log address `addr`).
    pub(crate) fn push_chunk(&mut self, addr: u64, bins: &[BinSummary]) {
        self.mark(addr);
        let start = self.next_bin();
        for b in bins {
            self.bins.push(*b);
            self.counts.push(BinCount {
                bin: b.bin,
                count: b.count,
            });
        }
        self.totals.push(ChunkTotal::of(bins));
        self.spans.push(BinSpan {
            start,
            len: bins.len() as u32,
        });
    }

    pub(crate) fn view(&self) -> SourceIndexView {
        SourceIndexView {
            spans: self.spans.view(),
            bins: self.bins.view(),
            counts: self.counts.view(),
            totals: self.totals.view(),
            span_base: self.span_base,
            bin_base: self.bin_base,
            paged_below: self.paged_below,
        }
    }
}

/// Readers' view of one source's summaries.
#[derive(Clone)]
pub(crate) struct SourceIndexView {
    spans: AppendView<BinSpan>,
    bins: AppendView<BinSummary>,
    counts: AppendView<BinCount>,
    totals: AppendView<ChunkTotal>,
    span_base: usize,
    bin_base: u64,
    paged_below: usize,
}

/// Readers' view of every source's summaries, by the writer's source index.
#[derive(Default)]
pub(crate) struct IndexSnapshot {
    pub sources: Vec<Option<SourceIndexView>>,
    /// First error the indexer met (a chunk it could not read); such chunks
    /// stay unindexed and are scanned.
    pub error: Option<String>,
    /// Where paged-out summaries are read from.
    pub pages: Option<Arc<SummaryPages>>,
    /// Bytes of summaries the indexer holds in memory (every source).
    pub held_bytes: usize,
}

/// One chunk's summaries, from memory or from a paged segment.
#[derive(Clone)]
pub(crate) enum SummaryIter<'a> {
    /// In memory, in one slab (nearly always), with the compact copies
    /// when they are in one slab too.
    Slice(
        std::slice::Iter<'a, BinSummary>,
        Option<(&'a [BinCount], ChunkTotal)>,
    ),
    /// Bins `next..end` of `bins` (indices in the vector, not bin numbers).
    Memory {
        bins: &'a AppendView<BinSummary>,
        next: u64,
        end: u64,
    },
    Paged(PagedBins),
}

impl SummaryIter<'_> {
    /// The summary of bin `bin`, if the chunk has one: a binary search
    /// where the summaries sit in one slice (they are in bin order).
    pub(crate) fn find_bin(self, bin: u32) -> Option<BinSummary> {
        match self {
            SummaryIter::Slice(it, _) => crate::bin_summary::find_bin(it.as_slice(), bin),
            SummaryIter::Paged(p) => p.find_bin(bin),
            mut other => other.find(|b| b.bin == bin),
        }
    }

    /// The bins and counts of the summaries and the chunk's total, where
    /// the page they were read from keeps them (`index::compact`): for a
    /// pass that needs no more of most summaries.
    #[inline]
    pub(crate) fn compact(&self) -> Option<(&[BinCount], ChunkTotal)> {
        match self {
            SummaryIter::Paged(p) => p.compact(),
            // Only while none is iterated (the total is of them all).
            SummaryIter::Slice(it, Some((c, t))) if it.len() == c.len() => Some((c, *t)),
            _ => None,
        }
    }

    /// The summary of bin `bin`, found in the compact copies where the
    /// page keeps them (one summary loaded), else as [`Self::find_bin`].
    pub(crate) fn find_compact(&self, bin: u32) -> Option<BinSummary> {
        match self {
            SummaryIter::Paged(p) => p.find_compact(bin),
            SummaryIter::Slice(it, Some((c, _))) if it.len() == c.len() => it
                .as_slice()
                .get(crate::index::compact::position(c, bin)?)
                .copied(),
            other => other.clone().find_bin(bin),
        }
    }
}

impl Iterator for SummaryIter<'_> {
    type Item = BinSummary;

    #[inline]
    fn next(&mut self) -> Option<BinSummary> {
        match self {
            SummaryIter::Slice(it, _) => it.next().copied(),
            SummaryIter::Memory { bins, next, end } => {
                while *next < *end {
                    let i = *next;
                    *next += 1;
                    if let Some(b) = bins.get(i as usize) {
                        return Some(b);
                    }
                }
                None
            }
            SummaryIter::Paged(p) => p.next(),
        }
    }
}

impl SourceIndexView {
    /// Entries held in memory: (chunk spans, bin summaries).
    fn held(&self) -> (usize, usize) {
        (
            self.spans.len() - self.spans.first(),
            self.bins.len() - self.bins.first(),
        )
    }
}

impl IndexSnapshot {
    /// Entries held in memory for source `source`: (chunk spans, bin
    /// summaries); `None` without a range index.
    pub(crate) fn held(&self, source: usize) -> Option<(usize, usize)> {
        Some(self.sources.get(source)?.as_ref()?.held())
    }

    /// The summaries of chunk `chunk_no` of source `source` (the writer's
    /// index; `source_id` its id), `None` if that chunk is not indexed
    /// (yet). A paged-out chunk's come from its segment index file, found
    /// by the chunk's log address (`addr`).
    pub(crate) fn summaries(
        &self,
        (source, source_id): (usize, u64),
        chunk_no: usize,
        addr: impl FnOnce() -> Option<u64>,
    ) -> Option<SummaryIter<'_>> {
        let v = self.sources.get(source)?.as_ref()?;
        let paged = || -> Option<SummaryIter<'_>> {
            let pages = self.pages.as_ref()?;
            Some(SummaryIter::Paged(pages.get(source_id, addr()?)?))
        };
        if chunk_no < v.paged_below {
            return paged();
        }
        let pos = chunk_no.checked_sub(v.span_base)?;
        let span = v.spans.get(pos).filter(|s| *s != BinSpan::UNKNOWN)?;
        if span == BinSpan::PAGED {
            return paged();
        }
        let next = span.start.checked_sub(v.bin_base)?;
        if let Some(s) = v.bins.slice(next as usize, span.len as usize) {
            let compact = v.counts.slice(next as usize, span.len as usize);
            let compact = compact.zip(v.totals.get(pos));
            return Some(SummaryIter::Slice(s.iter(), compact));
        }
        Some(SummaryIter::Memory {
            bins: &v.bins,
            next,
            end: next + u64::from(span.len),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `chunks` chunks of `bins` summaries each, 10 chunks per segment of
    /// 1 MiB: chunk `c`'s bins are `c·bins + k`.
    fn summaries(chunks: usize, bins: u32) -> SourceSummaries {
        let mut s = SourceSummaries::new(1 << 20);
        for c in 0..chunks {
            let b: Vec<BinSummary> = (0..bins)
                .map(|k| BinSummary {
                    bin: k,
                    count: c as u32 * bins + k,
                    ..BinSummary::default()
                })
                .collect();
            s.push_chunk((c as u64 / 10) << 20 | (c as u64 % 10) << 10, &b);
        }
        s
    }

    /// The summaries held for chunk `c`, `None` when not in memory.
    fn of(s: &SourceSummaries, c: usize) -> Option<Vec<u32>> {
        let span = s.span(c).filter(|sp| sp.in_memory())?;
        let first = (span.start - s.bin_base) as usize;
        (first..first + span.len as usize)
            .map(|i| s.bins.get(i).map(|b| b.count))
            .collect()
    }

    /// A busy source (a slab of summaries per few chunks) pages out in
    /// place: nothing kept is copied, the freed slabs' memory goes, and
    /// every kept chunk's summaries read as pushed. A slow one (many
    /// chunks per slab) starts its vectors again, so it holds only what
    /// it keeps.
    #[test]
    fn paging_out_frees_in_place_and_copies_only_a_slow_source() {
        let mut busy = summaries(500, 300);
        let before = busy.held_bytes();
        busy.page_out_through(29);
        assert_eq!(busy.paged_below, 300);
        assert_eq!(busy.span_base, 0, "a busy source is not copied");
        let kept = 200 * 300 * (SUMMARY_BYTES + std::mem::size_of::<BinCount>())
            + 200 * (std::mem::size_of::<BinSpan>() + std::mem::size_of::<ChunkTotal>());
        // At most a partly freed slab per vector stays behind.
        let slabs = PAGE * (SUMMARY_BYTES + std::mem::size_of::<BinCount>())
            + PAGE * (std::mem::size_of::<BinSpan>() + std::mem::size_of::<ChunkTotal>());
        assert!(
            busy.held_bytes() < before / 2,
            "{} of {before}",
            busy.held_bytes()
        );
        assert!(
            busy.held_bytes() <= kept + slabs,
            "{} held, {kept} kept",
            busy.held_bytes()
        );
        for c in 300..500 {
            let want: Vec<u32> = (0..300).map(|k| c as u32 * 300 + k).collect();
            assert_eq!(of(&busy, c), Some(want), "chunk {c}");
        }

        let mut slow = summaries(500, 2);
        slow.page_out_through(29);
        assert_eq!(slow.paged_below, 300);
        assert_eq!(slow.span_base, 300, "a slow source starts again");
        assert_eq!(slow.spans.held(), 200);
        for c in 300..500 {
            assert_eq!(of(&slow, c), Some(vec![c as u32 * 2, c as u32 * 2 + 1]));
        }
    }
}
