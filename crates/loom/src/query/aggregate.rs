//! count, sum, min and max of a source's indexed value over a window.

use crate::bin_summary::BinSummary;
use crate::error::{Error, Result};
use crate::index::compact::ChunkTotal;
use crate::index::state::IndexState;
use crate::query::edge::is_left_edge;
use crate::query::window::{EdgeScratch, Extremes};
use crate::snapshot::{Snapshot, SourceView};
use crate::source::{Extractor, SourceId};

/// Result of an aggregate query. `min`/`max` are `None` when `count` is 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Aggregate {
    /// Records in the window.
    pub count: u64,
    /// Sum of their values.
    pub sum: u128,
    /// Smallest value.
    pub min: Option<u64>,
    /// Largest value.
    pub max: Option<u64>,
}

impl Aggregate {
    /// Adds one value.
    #[inline]
    pub fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += u128::from(v);
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
    }

    /// Adds one bin summary's values.
    pub(crate) fn merge_bin(&mut self, b: &BinSummary) {
        self.merge(u64::from(b.count), b.sum, b.min, b.max);
    }

    /// Adds every bin summary of one chunk. Plain accumulators (no
    /// `Option` per bin) because this runs for every bin of every chunk a
    /// window covers.
    pub(crate) fn merge_bins(&mut self, bins: impl IntoIterator<Item = BinSummary>) {
        let (mut n, mut sum, mut lo, mut hi) = (0u64, 0u128, u64::MAX, 0u64);
        for b in bins {
            n += u64::from(b.count);
            sum += b.sum;
            lo = lo.min(b.min);
            hi = hi.max(b.max);
        }
        self.merge(n, sum, lo, hi);
    }

    /// Adds a chunk's total (its summaries merged beforehand).
    #[inline]
    pub(crate) fn merge_total(&mut self, t: &ChunkTotal) {
        self.merge(t.count, t.sum, t.min, t.max);
    }

    /// Adds another part's values (nothing when it is empty).
    pub(crate) fn merge_part(&mut self, p: &Aggregate) {
        if let (Some(min), Some(max)) = (p.min, p.max) {
            self.merge(p.count, p.sum, min, max);
        }
    }

    fn merge(&mut self, count: u64, sum: u128, min: u64, max: u64) {
        if count == 0 {
            return;
        }
        self.count += count;
        self.sum += sum;
        self.min = Some(self.min.map_or(min, |m| m.min(min)));
        self.max = Some(self.max.map_or(max, |m| m.max(max)));
    }
}

/// `ids` without repeats, sorted.
fn unique(ids: &[SourceId]) -> Vec<SourceId> {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

impl Snapshot {
    /// count, sum, min and max of the source's range-index value over
    /// `[t0, t1]`. Needs a range index; fully covered chunks cost no reads.
    pub fn aggregate(&self, id: SourceId, t0: u64, t1: u64) -> Result<Aggregate> {
        let sv = self.view(id)?;
        let ix = self.index_of(sv)?;
        let mut agg = Aggregate::default();
        self.aggregate_into(
            (sv, ix),
            t0,
            t1,
            Extremes::BOTH,
            &mut agg,
            &mut Default::default(),
        )?;
        Ok(agg)
    }

    /// Adds the source's records in `[t0, t1]` to `agg`: summaries for
    /// chunks inside the window and for a left edge (less its records
    /// before `t0`, see `query::edge`), reading the others. Extremes that
    /// `need` leaves out are not exact.
    pub(crate) fn aggregate_into(
        &self,
        (sv, ix): (&SourceView, &IndexState),
        t0: u64,
        t1: u64,
        need: Extremes,
        agg: &mut Aggregate,
        scratch: &mut EdgeScratch,
    ) -> Result<()> {
        if t0 > t1 {
            return Ok(());
        }
        let mut entries = sv.dir.entries(sv.dir.overlapping(t0, t1)?);
        while let Some((i, c)) = entries.next_entry()? {
            if let Some(bins) = self.covered_summaries(sv, i, &c, (t0, t1)) {
                match bins.compact() {
                    Some((_, total)) => agg.merge_total(&total),
                    None => agg.merge_bins(bins),
                }
                continue;
            }
            if is_left_edge(&c, t0, t1)
                && self.aggregate_left_edge((sv, ix), (i, &c), t0, need, agg, scratch)?
            {
                continue;
            }
            self.each_in_chunk(c.addr, t0, t1, |_, bytes| agg.add(ix.value(bytes)))?;
        }
        self.each_in_tail(sv, t0, t1, |_, bytes| agg.add(ix.value(bytes)))
    }

    /// [`Self::aggregate_many`] with only the extremes in `extremes`
    /// (the others `None`): a window's left edge chunks are then answered
    /// from their summaries more often (a minimum is often also among the
    /// records before the window, where the summaries cannot tell).
    pub fn aggregate_many_with(
        &self,
        ids: &[SourceId],
        t0: u64,
        t1: u64,
        extremes: Extremes,
    ) -> Result<Aggregate> {
        let a = self.aggregate_many_needing(ids, t0, t1, extremes)?;
        Ok(Aggregate {
            min: a.min.filter(|_| extremes.min),
            max: a.max.filter(|_| extremes.max),
            ..a
        })
    }

    /// [`Self::aggregate_many`] asked for the extremes in `need` only.
    fn aggregate_many_needing(
        &self,
        ids: &[SourceId],
        t0: u64,
        t1: u64,
        need: Extremes,
    ) -> Result<Aggregate> {
        let mut agg = Aggregate::default();
        let mut scratch = Default::default();
        for id in unique(ids) {
            let sv = self.view(id)?;
            let ix = self.index_of(sv)?;
            self.aggregate_into((sv, ix), t0, t1, need, &mut agg, &mut scratch)?;
        }
        Ok(agg)
    }

    /// The largest indexed value of the sources in `ids` over `[t0, t1]`
    /// (each id counted once), `None` for an empty window:
    /// [`Self::aggregate_many`]'s `max`, answered with less reading (a
    /// window's left edge chunk is mostly answered from its summaries,
    /// which cannot always tell the minimum). Every source needs a range
    /// index.
    pub fn max_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<Option<u64>> {
        let need = Extremes {
            min: false,
            max: true,
        };
        Ok(self.aggregate_many_needing(ids, t0, t1, need)?.max)
    }

    /// The smallest indexed value of the sources in `ids` over `[t0, t1]`:
    /// [`Self::max_many`]'s counterpart.
    pub fn min_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<Option<u64>> {
        let need = Extremes {
            min: true,
            max: false,
        };
        Ok(self.aggregate_many_needing(ids, t0, t1, need)?.min)
    }

    /// Number of records of the source in `[t0, t1]`. Needs no range
    /// index: chunks wholly inside the window are counted from the time
    /// index, only the two edge chunks and the unsealed tail are read (of
    /// the left edge, only its records before `t0`).
    pub fn count(&self, id: SourceId, t0: u64, t1: u64) -> Result<u64> {
        let sv = self.view(id)?;
        let mut n = 0u64;
        if t0 > t1 {
            return Ok(0);
        }
        for i in sv.dir.overlapping(t0, t1)? {
            let Some(c) = sv.dir.get(i)? else { break };
            if c.first_ts >= t0 && c.last_ts <= t1 {
                n += u64::from(c.count);
            } else if is_left_edge(&c, t0, t1) {
                // Only the records before the window are walked.
                let before = self.each_before(c.addr, t0, |_, _| {})?;
                n += u64::from(c.count).checked_sub(before).ok_or_else(|| {
                    Error::corrupted(c.addr, "chunk holds more records than its entry counts")
                })?;
            } else {
                self.each_in_chunk(c.addr, t0, t1, |_, _| n += 1)?;
            }
        }
        self.each_in_tail(sv, t0, t1, |_, _| n += 1)?;
        Ok(n)
    }

    /// [`Self::aggregate`] over the records of every source in `ids` taken
    /// together (each id counted once): count, sum, min and max of their
    /// indexed values in `[t0, t1]`, each source answered from its own
    /// summaries. Every source needs a range index (the layouts may
    /// differ: summaries carry values, not bins).
    pub fn aggregate_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<Aggregate> {
        self.aggregate_many_needing(ids, t0, t1, Extremes::BOTH)
    }

    /// [`Self::count`] summed over every source in `ids` (each id counted
    /// once). Needs no range index.
    pub fn count_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<u64> {
        let mut n = 0u64;
        for id in unique(ids) {
            n += self.count(id, t0, t1)?;
        }
        Ok(n)
    }

    /// The same aggregate computed by scanning every record of the window
    /// with `extractor`, without any range index (the source needs none).
    pub fn aggregate_raw(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        extractor: Extractor,
    ) -> Result<Aggregate> {
        let mut agg = Aggregate::default();
        self.scan(id, t0, t1, |_, bytes| agg.add(extractor(bytes)))?;
        Ok(agg)
    }
}
