//! One pass over a window of many series: their merged bin counts and
//! aggregate, from which any number of ranks (percentiles) and the count,
//! sum, min and max are answered without reading the window again.
//!
//! A question such as the paper's P2 (max and p99.99 over 60 s) over a
//! hundred series spends most of its time walking each series' edge chunks
//! (see `query::edge`); asking every function its own pass walks them once
//! per function. [`WindowBins`] walks them once.

use crate::bin_summary::BinSummary;
use crate::error::{Error, Result};
use crate::index::state::IndexState;
use crate::index::summaries::SummaryIter;
use crate::query::edge::{is_left_edge, LeftEdge};
use crate::query::percentile::{indexed_views, nearest_rank, note_decoded};
use crate::query::rank_bin::BinValues;
use crate::query::Aggregate;
use crate::snapshot::{Snapshot, SourceView};
use crate::source::SourceId;

/// Which extremes a [`WindowBins`] (or an aggregate) must find exactly;
/// the count and sum always are. Asking for fewer lets a window's left edge
/// chunks be answered from their summaries more often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extremes {
    /// The smallest value.
    pub min: bool,
    /// The largest value.
    pub max: bool,
}

impl Extremes {
    /// Both extremes.
    pub const BOTH: Extremes = Extremes {
        min: true,
        max: true,
    };
    /// Neither extreme (count and sum only).
    pub const NONE: Extremes = Extremes {
        min: false,
        max: false,
    };
}

/// Reused buffers: a left edge's summaries and its values before the window.
pub(crate) type EdgeScratch = (Vec<BinSummary>, Vec<u64>);

/// Count, sum and extremes of values read one by one.
struct Walked {
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Walked {
    fn default() -> Self {
        Walked {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Walked {
    #[inline(always)]
    fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
}

/// What [`WindowBins`] holds to find a rank.
enum Gathered {
    /// The sources' bin counts added up (one bin layout).
    Counts(Vec<u64>),
    /// Every value of the window, sorted (bin layouts that differ).
    Values(Vec<u64>),
}

/// A chunk of the window as the gathering pass met it, kept so a rank's
/// bin is read without finding each chunk and its summaries again (that
/// second walk cost as much as the first: a dashboard's p99 per bucket).
enum Part<'a> {
    /// Inside the window, with its summaries, and its summary of the
    /// hinted bin (`WindowBins::hint`) when it has one.
    Covered {
        view: usize,
        addr: u64,
        bins: SummaryIter<'a>,
        at_hint: Option<BinSummary>,
    },
    /// Read (an edge of the window, or not summarised yet).
    Read {
        view: usize,
        chunk: usize,
        addr: u64,
    },
}

thread_local! {
    /// The bin counts of this thread's last window, kept for its next:
    /// a fresh 80 KB buffer per 5 s bucket (10 000 bins) was zeroed by
    /// page faults each time, a sixth of a p99-per-bucket panel's time.
    static COUNTS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `n` zeroed bin counts, in the thread's kept buffer when it has one.
fn counts_buffer(n: usize) -> Vec<u64> {
    let mut v = COUNTS.with(|c| std::mem::take(&mut *c.borrow_mut()));
    v.clear();
    v.resize(n, 0);
    v
}

impl Drop for WindowBins<'_> {
    fn drop(&mut self) {
        if let Gathered::Counts(c) = &mut self.bins {
            let v = std::mem::take(c);
            COUNTS.with(|k| *k.borrow_mut() = v);
        }
    }
}

/// The indexed values of several sources over one window, gathered in one
/// pass by [`Snapshot::window_many`].
pub struct WindowBins<'a> {
    snap: &'a Snapshot,
    views: Vec<(&'a SourceView, &'a IndexState)>,
    t0: u64,
    t1: u64,
    /// Merged bin counts, or when the sources' bin layouts differ every
    /// value of the window, sorted.
    bins: Gathered,
    agg: Aggregate,
    extremes: Extremes,
    /// The window's chunks, in each source's order (one bin layout only);
    /// `None` past [`MAX_KEPT`] of them, found again by the rank pass.
    parts: Option<Vec<Part<'a>>>,
    /// The bin the thread's previous rank fell in (same layout; `u32::MAX`
    /// for none), whose summaries the gathering pass kept per chunk.
    hint: u32,
}

/// One bin layout: `(min, interval, n_bins)`.
type Layout = (u64, u64, u32);

thread_local! {
    /// The bin this thread's last rank fell in, and its layout. The next
    /// window is most often the next `GROUP BY time` bucket of the same
    /// series, whose rank falls in the same bin: the gathering pass keeps
    /// each chunk's summary of that bin while it is in cache, and the
    /// rank pass then reads those instead of each chunk's summaries again
    /// (a cache miss per chunk: ~30 ms of an hour's p99 per 5 s bucket).
    /// Only a guess: any other bin is found as before.
    static LAST_RANK_BIN: std::cell::Cell<Option<(Layout, u32)>> =
        const { std::cell::Cell::new(None) };
}

impl Snapshot {
    /// Gathers the indexed values of every source in `ids` (each counted
    /// once) over `[t0, t1]` in one pass: their merged bin counts when
    /// their range indexes share one bin layout, and their count, sum and
    /// the `extremes` asked for. Chunks inside the window are answered from
    /// their summaries, a left edge from its summaries less its records
    /// before `t0`, the others read. Sources whose bin layouts differ
    /// have every value of the window read and kept, sorted (still one
    /// pass). Every source needs a range index
    /// ([`Error::NoRangeIndex`]); an unknown id is [`Error::UnknownSource`].
    pub fn window_many(
        &self,
        ids: &[SourceId],
        t0: u64,
        t1: u64,
        extremes: Extremes,
    ) -> Result<WindowBins<'_>> {
        let views = indexed_views(self, ids)?;
        let mut agg = Aggregate::default();
        let mut scratch = EdgeScratch::default();
        let mut parts = Some(Vec::new());
        let first = views.first().map(|&(_, ix)| ix);
        let shared = first.filter(|f| {
            views
                .iter()
                .all(|(_, ix)| ix.same_bins(f.min, f.interval, f.n_bins))
        });
        let mut hint = u32::MAX;
        let bins = match shared {
            Some(f) => {
                let mut counts = counts_buffer(f.bins.total());
                let layout = (f.min, f.interval, f.n_bins);
                hint = LAST_RANK_BIN
                    .get()
                    .filter(|(l, _)| *l == layout)
                    .map_or(u32::MAX, |(_, bin)| bin);
                if t0 <= t1 {
                    for (view, &(sv, ix)) in views.iter().enumerate() {
                        let into = (counts.as_mut_slice(), &mut agg, &mut parts);
                        let source = (view, sv, ix);
                        self.gather(source, (t0, t1), extremes, into, &mut scratch, hint)?;
                    }
                }
                Gathered::Counts(counts)
            }
            None => {
                let values = if t0 <= t1 {
                    self.values_sorted(&views, t0, t1)?
                } else {
                    Vec::new()
                };
                for &v in &values {
                    agg.add(v);
                }
                Gathered::Values(values)
            }
        };
        Ok(WindowBins {
            snap: self,
            views,
            t0,
            t1,
            bins,
            agg,
            extremes,
            parts,
            hint,
        })
    }

    /// Adds the source's values in `[t0, t1]` to `counts` by bin and to
    /// `agg`: from summaries for summarised chunks inside the window, and
    /// for a summarised left edge its summaries less its records before
    /// `t0`; by reading the others (the right edge, chunks not summarised
    /// yet, the tail).
    fn gather<'s>(
        &'s self,
        (view, sv, ix): (usize, &SourceView, &IndexState),
        (t0, t1): (u64, u64),
        need: Extremes,
        (counts, agg, parts): (&mut [u64], &mut Aggregate, &mut Option<Vec<Part<'s>>>),
        scratch: &mut EdgeScratch,
        hint: u32,
    ) -> Result<()> {
        // Values read one by one go to a plain accumulator (no `Option`s
        // per value), added to `agg` at the end.
        let mut walked = Walked::default();
        let add = |counts: &mut [u64], walked: &mut Walked, v: u64| {
            if let Some(c) = counts.get_mut(ix.bins.bin_of(v) as usize) {
                *c += 1;
            }
            walked.add(v);
        };
        let mut entries = sv.dir.entries(sv.dir.overlapping(t0, t1)?);
        while let Some((i, c)) = entries.next_entry()? {
            if let Some(bins) = self.covered_summaries(sv, i, &c, (t0, t1)) {
                let at_hint = add_covered(&bins, counts, agg, hint);
                keep(
                    parts,
                    Part::Covered {
                        view,
                        addr: c.addr,
                        bins,
                        at_hint,
                    },
                );
                continue;
            }
            keep(
                parts,
                Part::Read {
                    view,
                    chunk: i,
                    addr: c.addr,
                },
            );
            let edge = if is_left_edge(&c, t0, t1) {
                self.left_edge_part((sv, ix), (i, &c), t0, need, scratch, |v| {
                    add(counts, &mut walked, v)
                })?
            } else {
                LeftEdge::NotSummarised
            };
            let part = match edge {
                LeftEdge::NotSummarised => {
                    self.each_in_chunk(c.addr, t0, t1, |_, b| {
                        add(counts, &mut walked, ix.value(b))
                    })?;
                    continue;
                }
                LeftEdge::Read => continue,
                LeftEdge::FromSummaries(part) => part,
            };
            // The chunk's counts less those of its records before t0.
            agg.merge_part(&part);
            let (summaries, before) = &*scratch;
            for b in summaries.iter() {
                if let Some(c) = counts.get_mut(b.bin as usize) {
                    *c += u64::from(b.count);
                }
            }
            for &v in before.iter() {
                let bin = ix.bins.bin_of(v) as usize;
                match counts.get(bin).and_then(|n| n.checked_sub(1)) {
                    Some(less) => counts[bin] = less,
                    None => {
                        return Err(Error::corrupted(
                            c.addr,
                            "a record's bin is missing from its chunk's summaries",
                        ))
                    }
                }
            }
        }
        self.each_in_tail(sv, t0, t1, |_, b| add(counts, &mut walked, ix.value(b)))?;
        if walked.count > 0 {
            agg.merge_part(&Aggregate {
                count: walked.count,
                sum: walked.sum,
                min: Some(walked.min),
                max: Some(walked.max),
            });
        }
        Ok(())
    }
}

/// Chunks of a window kept for its rank pass (~128 bytes each): a 5 s
/// bucket holds hundreds, but one window over a busy hour ~300 000
/// (~38 MB); past this many, the rank pass finds them again instead.
#[cfg(not(test))]
const MAX_KEPT: usize = 1 << 16;
/// A few, so unit tests take the rank pass's second walk.
#[cfg(test)]
const MAX_KEPT: usize = 4;

/// Keeps `part` for the rank pass, or drops every part once there are
/// [`MAX_KEPT`].
fn keep<'a>(parts: &mut Option<Vec<Part<'a>>>, part: Part<'a>) {
    if let Some(kept) = parts {
        if kept.len() < MAX_KEPT {
            kept.push(part);
        } else {
            *parts = None;
        }
    }
}

/// Adds a chunk inside the window to `counts` by bin and to `agg`, and
/// returns its summary of bin `hint` if it has one. A paged chunk's
/// compact copies are read (`index::compact`: 8 bytes a bin, not 48, and
/// one total for the aggregate) and no summary: the rank pass finds its
/// bin in the compact copies, still in cache, and loads that summary
/// then (fetching it here cost a cache miss per chunk whatever the rank's
/// bin turned out to be).
#[inline]
fn add_covered(
    bins: &SummaryIter<'_>,
    counts: &mut [u64],
    agg: &mut Aggregate,
    hint: u32,
) -> Option<BinSummary> {
    if let Some((compact, total)) = bins.compact() {
        for b in compact {
            if let Some(c) = counts.get_mut(b.bin as usize) {
                *c += u64::from(b.count);
            }
        }
        agg.merge_total(&total);
        return None;
    }
    let mut at_hint = None;
    for b in bins.clone() {
        if let Some(c) = counts.get_mut(b.bin as usize) {
            *c += u64::from(b.count);
        }
        if b.bin == hint {
            at_hint = Some(b);
        }
        agg.merge_bin(&b);
    }
    at_hint
}

/// Appends a record's value if it falls in bin `target`.
#[inline]
fn take(ix: &IndexState, target: u32, values: &mut BinValues, bytes: &[u8]) {
    let v = ix.value(bytes);
    if ix.bins.bin_of(v) == target {
        values.push(v);
    }
}

impl WindowBins<'_> {
    /// Records in the window.
    pub fn count(&self) -> u64 {
        self.agg.count
    }

    /// Count, sum and the extremes asked for (`None` for one not asked
    /// for, and both for an empty window).
    pub fn aggregate(&self) -> Aggregate {
        Aggregate {
            min: self.agg.min.filter(|_| self.extremes.min),
            max: self.agg.max.filter(|_| self.extremes.max),
            ..self.agg
        }
    }

    /// The value at quantile `q` (nearest rank), as
    /// [`Snapshot::percentile_many`].
    pub fn percentile(&self, q: f64) -> Result<Option<u64>> {
        if !(0.0..=1.0).contains(&q) {
            return Err(Error::InvalidQuery(format!(
                "quantile {q} is outside 0..=1"
            )));
        }
        self.value_at_rank(|n| nearest_rank(q, n))
    }

    /// The `k`-th smallest (1-based) value, `k = rank(n)` for the window's
    /// `n` values, as [`Snapshot::value_at_rank_many`]: the bin holding
    /// rank `k` is found from the merged counts and only that bin's
    /// records are read from each source.
    pub fn value_at_rank(&self, rank: impl FnOnce(u64) -> u64) -> Result<Option<u64>> {
        let n = self.agg.count;
        if n == 0 {
            return Ok(None);
        }
        let k = rank(n);
        if k == 0 || k > n {
            return Ok(None);
        }
        let counts = match &self.bins {
            Gathered::Counts(counts) => counts,
            Gathered::Values(values) => return Ok(values.get((k - 1) as usize).copied()),
        };
        let mut before = 0u64;
        let mut target = None;
        for (b, &c) in counts.iter().enumerate() {
            if before + c >= k {
                target = Some(b as u32);
                break;
            }
            before += c;
        }
        let Some(target) = target else {
            return Err(Error::corrupted(0, "bin counts do not add up"));
        };
        if let Some((_, ix)) = self.views.first() {
            LAST_RANK_BIN.set(Some(((ix.min, ix.interval, ix.n_bins), target)));
        }
        let layout = self.views.first().and_then(|(_, ix)| ix.fine.as_ref());
        let mut values = BinValues::new(layout, target, counts[target as usize]);
        self.values_in_bin(target, &mut values)?;
        values.select(k - before, target).map(Some)
    }

    /// Appends the window's values that fall in bin `target`: a chunk
    /// inside the window whose summary of that bin pins its values down
    /// (`BinSummary::exact_values`, `BinSummary::fine_counts`) is not
    /// read, nor one without records in it; the others are read, and
    /// each source's tail.
    fn values_in_bin(&self, target: u32, values: &mut BinValues) -> Result<()> {
        let (t0, t1) = (self.t0, self.t1);
        let mut few = Vec::new();
        match &self.parts {
            Some(parts) => {
                let hinted = target == self.hint;
                // Paged chunks' summaries of the bin are loaded first, in
                // a loop of loads only, so their cache misses overlap.
                let mut loaded = Vec::new();
                for part in parts {
                    match part {
                        Part::Covered {
                            view, addr, bins, ..
                        } if bins.compact().is_some() => {
                            if let Some(b) = bins.find_compact(target) {
                                loaded.push((*view, *addr, b));
                            }
                        }
                        _ => self.part_in_bin(part, target, hinted, values, &mut few)?,
                    }
                }
                for (view, addr, b) in loaded {
                    self.summary_in_bin((view, addr), b, values, &mut few)?;
                }
            }
            // Too many to keep: the gathering pass's walk again.
            None => {
                for (view, &(sv, _)) in self.views.iter().enumerate() {
                    let mut entries = sv.dir.entries(sv.dir.overlapping(t0, t1)?);
                    while let Some((i, c)) = entries.next_entry()? {
                        let part = match self.snap.covered_summaries(sv, i, &c, (t0, t1)) {
                            Some(bins) => Part::Covered {
                                view,
                                addr: c.addr,
                                bins,
                                at_hint: None,
                            },
                            None => Part::Read {
                                view,
                                chunk: i,
                                addr: c.addr,
                            },
                        };
                        self.part_in_bin(&part, target, false, values, &mut few)?;
                    }
                }
            }
        }
        for &(sv, ix) in &self.views {
            self.snap
                .each_in_tail(sv, t0, t1, |_, b| take(ix, target, values, b))?;
        }
        Ok(())
    }

    /// Appends the values of chunk `addr` (of source `view`) whose summary
    /// of the rank's bin is `b`: from the summary when it pins them down,
    /// else by reading the chunk.
    fn summary_in_bin(
        &self,
        (view, addr): (usize, u64),
        b: BinSummary,
        values: &mut BinValues,
        few: &mut Vec<u64>,
    ) -> Result<()> {
        let ix = self.views[view].1;
        few.clear();
        if b.exact_values(few).is_some() {
            few.iter().for_each(|&v| values.push(v));
            return Ok(());
        }
        if let Some((lo, counts)) = ix.fine.as_ref().and_then(|f| b.fine_counts(f)) {
            values.add_counts(lo, &counts);
            return Ok(());
        }
        note_decoded();
        let target = b.bin;
        self.snap
            .each_in_chunk(addr, self.t0, self.t1, |_, bytes| {
                take(ix, target, values, bytes)
            })?;
        Ok(())
    }

    /// Appends one chunk's values in bin `target` (`hinted`: `target` is
    /// the hint, and `at_hint` holds the chunk's summary of it).
    fn part_in_bin(
        &self,
        part: &Part<'_>,
        target: u32,
        hinted: bool,
        values: &mut BinValues,
        few: &mut Vec<u64>,
    ) -> Result<()> {
        let snap = self.snap;
        let (view, addr) = match part {
            Part::Covered {
                view,
                addr,
                bins,
                at_hint,
            } => {
                // The gathering pass saw every bin of the chunk: no
                // summary of the hinted bin means no record in it (a
                // paged chunk's is found in its compact copies).
                let found = match bins.compact() {
                    Some(_) => bins.find_compact(target),
                    None if hinted => *at_hint,
                    None => bins.clone().find_bin(target),
                };
                let Some(b) = found else {
                    return Ok(());
                };
                return self.summary_in_bin((*view, *addr), b, values, few);
            }
            Part::Read { view, chunk, addr } => {
                let sv = self.views[*view].0;
                let holds = snap.summaries(sv, *chunk).map(|b| b.find_bin(target));
                if let Some(None) = holds {
                    return Ok(());
                }
                (*view, *addr)
            }
        };
        let ix = self.views[view].1;
        note_decoded();
        snap.each_in_chunk(addr, self.t0, self.t1, |_, b| take(ix, target, values, b))?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
