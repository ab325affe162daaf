//! Range-index summaries as readers see them, and how one chunk is
//! summarised (shared by the indexer thread and recovery).

use crate::bin_summary::BinSummary;
use crate::index::state::IndexState;
use crate::log::record::for_each_bytes;
use crate::log::slab::{AppendVec, AppendView};

/// Entries per slab page of the summary logs.
const PAGE: usize = 4096;

/// Where one chunk's summaries sit in its source's `bins` log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BinSpan {
    pub start: u64,
    pub len: u32,
}

/// One source's summaries, chunk by chunk (chunk number = position in
/// `spans`), owned by the indexer thread.
pub(crate) struct SourceSummaries {
    pub spans: AppendVec<BinSpan>,
    pub bins: AppendVec<BinSummary>,
}

impl BinSpan {
    /// A chunk whose summaries are not known (below where indexing began).
    const UNKNOWN: BinSpan = BinSpan {
        start: 0,
        len: u32::MAX,
    };
}

impl SourceSummaries {
    pub(crate) fn new() -> Self {
        SourceSummaries {
            spans: AppendVec::new(PAGE),
            bins: AppendVec::new(PAGE),
        }
    }

    /// Summaries that begin at chunk `first_chunk` (a source whose older
    /// chunks retention already dropped); earlier chunks read as unknown.
    pub(crate) fn starting_at(first_chunk: usize) -> Self {
        let mut s = Self::new();
        s.spans.skip_to(first_chunk, BinSpan::UNKNOWN);
        s
    }

    /// Frees the summaries of chunks below `chunk` (retention dropped them).
    pub(crate) fn forget_below(&mut self, chunk: usize) {
        let chunk = chunk.min(self.spans.len());
        // Bins are pushed in chunk order, so the first bin still needed is
        // the first bin of `chunk` (every bin when all chunks go; none when
        // `chunk` and all before it were never summarised).
        let first_bin = if chunk == self.spans.len() {
            self.bins.len() as u64
        } else {
            match self.spans.get(chunk) {
                Some(span) if span != BinSpan::UNKNOWN => span.start,
                _ => 0,
            }
        };
        self.bins.drop_below(first_bin as usize);
        self.spans.drop_below(chunk);
    }

    /// Appends the summaries of the next chunk.
    pub(crate) fn push_chunk(&mut self, bins: &[BinSummary]) {
        let start = self.bins.len() as u64;
        for b in bins {
            self.bins.push(*b);
        }
        self.spans.push(BinSpan {
            start,
            len: bins.len() as u32,
        });
    }

    pub(crate) fn view(&self) -> SourceIndexView {
        SourceIndexView {
            spans: self.spans.view(),
            bins: self.bins.view(),
        }
    }
}

/// Readers' view of one source's summaries.
#[derive(Clone)]
pub(crate) struct SourceIndexView {
    pub spans: AppendView<BinSpan>,
    pub bins: AppendView<BinSummary>,
}

/// Readers' view of every source's summaries, by the writer's source index.
#[derive(Default)]
pub(crate) struct IndexSnapshot {
    pub sources: Vec<Option<SourceIndexView>>,
    /// First error the indexer met (a chunk it could not read); such chunks
    /// stay unindexed and are scanned.
    pub error: Option<String>,
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

    /// The summaries of chunk `chunk_no` of source `source`, `None` if that
    /// chunk is not indexed (yet).
    pub(crate) fn summaries(
        &self,
        source: usize,
        chunk_no: usize,
    ) -> Option<impl Iterator<Item = BinSummary> + '_> {
        let v = self.sources.get(source)?.as_ref()?;
        let span = v.spans.get(chunk_no).filter(|s| *s != BinSpan::UNKNOWN)?;
        Some(
            (span.start..span.start + u64::from(span.len))
                .filter_map(move |i| v.bins.get(i as usize)),
        )
    }
}

/// Scratch space for summarising chunks: one accumulator per bin, and the
/// bins a chunk touched, so emitting and resetting costs per non-empty bin,
/// not per declared bin (sources may declare thousands). Every accumulator
/// is back to empty after each chunk, so one scratch space serves chunks
/// of every index (it grows to the largest bin count it has met).
pub(crate) struct Summariser {
    acc: Vec<BinSummary>,
    touched: Vec<u32>,
}

impl Summariser {
    pub(crate) fn new() -> Self {
        Summariser {
            acc: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// Summaries (bin order) of the `count` records encoded in `payload`.
    pub(crate) fn summarise(
        &mut self,
        state: &IndexState,
        payload: &[u8],
        count: u32,
        out: &mut Vec<BinSummary>,
    ) -> Result<(), String> {
        out.clear();
        if self.acc.len() < state.bins.total() {
            self.acc.resize(state.bins.total(), BinSummary::default());
        }
        let acc = &mut self.acc;
        let touched = &mut self.touched;
        touched.clear();
        let r = for_each_bytes(payload, count, |b| {
            let v = state.value(b);
            let bin = state.bins.bin_of(v);
            if let Some(slot) = acc.get_mut(bin as usize) {
                if slot.count == 0 {
                    touched.push(bin);
                }
                slot.add(v);
            }
        });
        touched.sort_unstable();
        for &bin in touched.iter() {
            let sm = std::mem::take(&mut acc[bin as usize]);
            out.push(BinSummary { bin, ..sm });
        }
        r.map_err(|e| e.to_string())
    }
}
