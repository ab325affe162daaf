//! How far out of event-time order a recording's records arrive: what sizes
//! loom-app's reorder window (`--reorder-window-ms`).
//!
//! The reorder stage holds every source's records and releases a record once
//! the newest event time seen on any source is more than the window past it;
//! a record that arrives after a newer record of its source was released is
//! late and refused (counted as `late`). So a record is safe when, on
//! arrival, it is at most the window behind the newest event time seen so
//! far. Its *lateness* is that distance (0 when it is the newest); the share
//! of records later than a window bounds the share the stage refuses from
//! above.

use std::collections::HashMap;

use telemetry::raw::SourceKey;
use telemetry::Batch;

use crate::percentile::percentile_nearest_rank;

/// Windows (ms) whose share of later records is reported.
pub const WINDOWS_MS: [u64; 8] = [1, 5, 10, 25, 50, 100, 250, 1000];

/// Lateness of every record, in arrival order.
#[derive(Default)]
pub struct DisorderBuilder {
    newest: u64,
    late: Vec<u64>,
    by_source: HashMap<SourceKey, (u64, u64)>,
}

/// The disorder of a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Disorder {
    /// Records seen.
    pub records: u64,
    /// Records behind the newest event time seen (lateness > 0).
    pub behind: u64,
    /// Lateness percentiles, µs: p50, p99, p99.9, p99.99.
    pub p50: u64,
    /// See `p50`.
    pub p99: u64,
    /// See `p50`.
    pub p999: u64,
    /// See `p50`.
    pub p9999: u64,
    /// Largest lateness, µs.
    pub max: u64,
    /// For each of [`WINDOWS_MS`], the records later than it.
    pub later_than: Vec<(u64, u64)>,
    /// Per source: its name and its records' largest lateness behind the
    /// source's own newest time (how far one source alone is out of order), µs.
    pub per_source_max: Vec<(String, u64)>,
}

impl DisorderBuilder {
    /// Adds a batch, in arrival order.
    pub fn add(&mut self, b: &Batch) {
        for r in &b.records {
            let t = r.timestamp_us();
            self.late.push(self.newest.saturating_sub(t));
            self.newest = self.newest.max(t);
            let s = self
                .by_source
                .entry(SourceKey::of_record(r))
                .or_insert((0, 0));
            s.1 = s.1.max(s.0.saturating_sub(t));
            s.0 = s.0.max(t);
        }
    }

    /// Finishes the statistics.
    pub fn finish(mut self) -> Disorder {
        let records = self.late.len() as u64;
        let behind = self.late.iter().filter(|&&l| l > 0).count() as u64;
        let later_than = WINDOWS_MS
            .iter()
            .map(|&w| {
                (
                    w,
                    self.late.iter().filter(|&&l| l > w * 1000).count() as u64,
                )
            })
            .collect();
        self.late.sort_unstable();
        let p = |q| percentile_nearest_rank(&self.late, q).unwrap_or(0);
        let mut per_source_max: Vec<(String, u64)> = self
            .by_source
            .iter()
            .map(|(k, &(_, m))| {
                let id = k.id();
                (
                    telemetry::source::describe(id).unwrap_or_else(|| format!("{id:#018x}")),
                    m,
                )
            })
            .collect();
        per_source_max.sort();
        Disorder {
            records,
            behind,
            p50: p(0.5),
            p99: p(0.99),
            p999: p(0.999),
            p9999: p(0.9999),
            max: self.late.last().copied().unwrap_or(0),
            later_than,
            per_source_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telemetry::{KvOp, KvOpKind, Record};

    fn kv(t: u64) -> Record {
        Record::KvOp(KvOp {
            thread_id: 1,
            op: KvOpKind::Read,
            start_us: t,
            duration_us: 1,
        })
    }

    #[test]
    fn lateness_is_the_distance_behind_the_newest_time() {
        let mut d = DisorderBuilder::default();
        // Two threads' batches interleave: the second runs 30 ms behind.
        d.add(&Batch::new(0, vec![kv(100_000), kv(110_000)]));
        d.add(&Batch::new(0, vec![kv(80_000), kv(90_000)]));
        d.add(&Batch::new(0, vec![kv(120_000)]));
        let got = d.finish();
        assert_eq!(got.records, 5);
        assert_eq!(got.behind, 2);
        assert_eq!(got.max, 30_000);
        assert_eq!(got.p50, 0);
        let later = |w| got.later_than.iter().find(|x| x.0 == w).map(|x| x.1);
        assert_eq!(later(10), Some(2));
        assert_eq!(later(25), Some(1));
        assert_eq!(later(50), Some(0));
        assert_eq!(got.per_source_max, vec![("kv/read".to_string(), 30_000)]);
    }
}
