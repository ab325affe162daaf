//! Exact percentiles: bin counts find the bin, then only that bin is read.

use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use crate::source::SourceId;

/// 1-based nearest rank of quantile `q` among `n` values: `ceil(q * n)`,
/// at least 1.
pub fn nearest_rank(q: f64, n: u64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

impl Snapshot {
    /// The value at quantile `q` (0 ≤ q ≤ 1; 0.9999 for p99.99) of the
    /// source's indexed value over `[t0, t1]`, by nearest rank
    /// (`nearest_rank`): the smallest value with at least `ceil(q·n)` values
    /// at or below it. `None` for an empty window.
    pub fn percentile(&self, id: SourceId, t0: u64, t1: u64, q: f64) -> Result<Option<u64>> {
        if !(0.0..=1.0).contains(&q) {
            return Err(Error::InvalidQuery(format!(
                "quantile {q} is outside 0..=1"
            )));
        }
        self.value_at_rank(id, t0, t1, |n| nearest_rank(q, n))
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
        let sv = self.view(id)?;
        let ix = self.index_of(sv)?;
        if t0 > t1 {
            return Ok(None);
        }
        let mut counts = vec![0u64; ix.bins.total()];
        let range = sv.dir.overlapping(t0, t1);
        for i in range.clone() {
            let Some(c) = sv.dir.chunks.get(i) else { break };
            let summaries = self.covered_summaries(sv, i, &c, (t0, t1));
            match summaries {
                Some(bins) => {
                    for b in bins {
                        counts[b.bin as usize] += u64::from(b.count);
                    }
                }
                None => {
                    self.each_in_chunk(c.addr, t0, t1, |_, bytes| {
                        counts[ix.bins.bin_of(ix.value(bytes)) as usize] += 1;
                    })?;
                }
            }
        }
        self.each_in_tail(sv, t0, t1, |_, bytes| {
            counts[ix.bins.bin_of(ix.value(bytes)) as usize] += 1;
        })?;
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return Ok(None);
        }
        let k = rank(n);
        if k == 0 || k > n {
            return Ok(None);
        }
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
        let mut values = Vec::with_capacity(counts[target as usize] as usize);
        let mut take = |_: u64, bytes: &[u8]| {
            let v = ix.value(bytes);
            if ix.bins.bin_of(v) == target {
                values.push(v);
            }
        };
        for i in range {
            let Some(c) = sv.dir.chunks.get(i) else { break };
            let fully = c.first_ts >= t0 && c.last_ts <= t1;
            if fully {
                if let Some(mut bins) = self.summaries(sv, i) {
                    if !bins.any(|b| b.bin == target) {
                        continue;
                    }
                }
            }
            self.each_in_chunk(c.addr, t0, t1, &mut take)?;
        }
        self.each_in_tail(sv, t0, t1, &mut take)?;
        let r = (k - before) as usize;
        if r == 0 || r > values.len() {
            return Err(Error::corrupted(
                0,
                format!(
                    "bin {target} holds {} values, rank {r} wanted",
                    values.len()
                ),
            ));
        }
        let (_, v, _) = values.select_nth_unstable(r - 1);
        Ok(Some(*v))
    }
}
