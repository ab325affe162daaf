//! count, sum, min and max of a source's indexed value over a window.

use crate::error::Result;
use crate::snapshot::Snapshot;
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
        if t0 > t1 {
            return Ok(agg);
        }
        for i in sv.dir.overlapping(t0, t1)? {
            let Some(c) = sv.dir.get(i)? else { break };
            let summaries = self.covered_summaries(sv, i, &c, (t0, t1));
            match summaries {
                Some(bins) => {
                    for b in bins {
                        agg.merge(u64::from(b.count), b.sum, b.min, b.max);
                    }
                }
                None => {
                    self.each_in_chunk(c.addr, t0, t1, |_, bytes| agg.add(ix.value(bytes)))?;
                }
            }
        }
        self.each_in_tail(sv, t0, t1, |_, bytes| agg.add(ix.value(bytes)))?;
        Ok(agg)
    }

    /// Number of records of the source in `[t0, t1]`. Needs no range
    /// index: chunks wholly inside the window are counted from the time
    /// index, only the two edge chunks and the unsealed tail are read.
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
        let mut agg = Aggregate::default();
        for id in unique(ids) {
            let a = self.aggregate(id, t0, t1)?;
            agg.merge(a.count, a.sum, a.min.unwrap_or(0), a.max.unwrap_or(0));
        }
        Ok(agg)
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
