//! Exact percentiles: bin counts find the bin, then only that bin is read.
//!
//! Over several series (one measurement, many tag sets) the series' bin
//! counts are added up when their range indexes share one bin layout (the
//! same `min`, `interval`, `n_bins`: every series of one schema does), so a
//! percentile over a hundred series reads what one over a single series
//! holding the same records reads.

use crate::error::{Error, Result};
use crate::index::state::IndexState;
use crate::query::window::Extremes;
use crate::snapshot::{Snapshot, SourceView};
use crate::source::SourceId;

thread_local! {
    /// Chunks this thread decoded to find a rank's value in its bin.
    static DECODED_FOR_RANK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many chunks the calling thread has decoded, since it started, to
/// read the values of a percentile's (or rank's) bin: those whose
/// summaries did not pin the bin's values down. Tests and benchmarks read
/// it before and after a query; it is per thread, so queries on other
/// threads do not disturb it.
pub fn rank_chunks_decoded() -> u64 {
    DECODED_FOR_RANK.with(|n| n.get())
}

/// Counts one chunk decoded for a rank's bin ([`rank_chunks_decoded`]).
pub(crate) fn note_decoded() {
    DECODED_FOR_RANK.with(|n| n.set(n.get() + 1));
}

/// 1-based nearest rank of quantile `q` among `n` values: `ceil(q * n)`,
/// at least 1.
pub fn nearest_rank(q: f64, n: u64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// Each series once, in the writer's order, with its range index.
pub(crate) fn indexed_views<'a>(
    snap: &'a Snapshot,
    ids: &[SourceId],
) -> Result<Vec<(&'a SourceView, &'a IndexState)>> {
    let mut out: Vec<(&SourceView, &IndexState)> = Vec::with_capacity(ids.len());
    for &id in ids {
        let sv = snap.view(id)?;
        out.push((sv, snap.index_of(sv)?));
    }
    out.sort_unstable_by_key(|(sv, _)| sv.id);
    out.dedup_by_key(|(sv, _)| sv.id);
    Ok(out)
}

impl Snapshot {
    /// The value at quantile `q` (0 ≤ q ≤ 1; 0.9999 for p99.99) of the
    /// source's indexed value over `[t0, t1]`, by nearest rank
    /// (`nearest_rank`): the smallest value with at least `ceil(q·n)` values
    /// at or below it. `None` for an empty window.
    pub fn percentile(&self, id: SourceId, t0: u64, t1: u64, q: f64) -> Result<Option<u64>> {
        self.percentile_many(&[id], t0, t1, q)
    }

    /// [`Self::percentile`] over the records of every source in `ids` taken
    /// together (each id counted once, whatever its repeats): the value at
    /// quantile `q` among all their indexed values in `[t0, t1]`. Every
    /// source needs a range index; `None` when the window holds no record
    /// of any of them.
    pub fn percentile_many(
        &self,
        ids: &[SourceId],
        t0: u64,
        t1: u64,
        q: f64,
    ) -> Result<Option<u64>> {
        if !(0.0..=1.0).contains(&q) {
            return Err(Error::InvalidQuery(format!(
                "quantile {q} is outside 0..=1"
            )));
        }
        self.value_at_rank_many(ids, t0, t1, |n| nearest_rank(q, n))
    }

    /// The `k`-th smallest (1-based) of the source's indexed values over
    /// `[t0, t1]`, where `k = rank(n)` is chosen from the number `n` of
    /// values in the window (so callers apply their own rank rule). `None`
    /// for an empty window or a rank outside `1..=n`. Bin counts locate the
    /// bin holding rank `k`; only chunks holding that bin are read.
    pub fn value_at_rank(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        rank: impl FnOnce(u64) -> u64,
    ) -> Result<Option<u64>> {
        self.value_at_rank_many(&[id], t0, t1, rank)
    }

    /// [`Self::value_at_rank`] over the records of every source in `ids`
    /// taken together (each id counted once). When their range indexes
    /// share one bin layout, the sources' bin counts are added up, the bin
    /// holding rank `k` is found from the sums, and only that bin's records
    /// are read from each source: the work grows with the chunks in the
    /// window, not with the number of sources. Sources with different
    /// layouts are answered exactly too, by reading every record of the
    /// window. Every source needs a range index
    /// ([`Error::NoRangeIndex`] otherwise); an unknown id is
    /// [`Error::UnknownSource`].
    pub fn value_at_rank_many(
        &self,
        ids: &[SourceId],
        t0: u64,
        t1: u64,
        rank: impl FnOnce(u64) -> u64,
    ) -> Result<Option<u64>> {
        self.window_many(ids, t0, t1, Extremes::NONE)?
            .value_at_rank(rank)
    }

    /// Every indexed value of the sources in `[t0, t1]`, sorted: the exact
    /// answer for sources whose bin layouts differ.
    pub(crate) fn values_sorted(
        &self,
        views: &[(&SourceView, &IndexState)],
        t0: u64,
        t1: u64,
    ) -> Result<Vec<u64>> {
        let mut values = Vec::new();
        for &(sv, ix) in views {
            let mut take = |_: u64, bytes: &[u8]| values.push(ix.value(bytes));
            for i in sv.dir.overlapping(t0, t1)? {
                let Some(c) = sv.dir.get(i)? else { break };
                self.each_in_chunk(c.addr, t0, t1, &mut take)?;
            }
            self.each_in_tail(sv, t0, t1, &mut take)?;
        }
        values.sort_unstable();
        Ok(values)
    }
}
