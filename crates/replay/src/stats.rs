//! Per-source statistics of a recording (what `data-stats` prints).

use std::collections::BTreeMap;
use std::path::Path;

use telemetry::{Batch, RecordingError, RecordingHeader, RecordingReader, SourceId};

use crate::percentile::percentile_nearest_rank;

/// Statistics of one source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceStats {
    /// Source id.
    pub id: SourceId,
    /// Tag such as `kv/read` (or the id in hex when unknown).
    pub name: String,
    /// Records of the source.
    pub count: u64,
    /// Records per second of arrival time.
    pub rate_per_s: f64,
    /// Index value percentiles: p50, p99, p99.99 and max.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Largest value.
    pub max: u64,
}

/// Statistics of a whole recording.
#[derive(Debug, Clone)]
pub struct RecordingStats {
    /// The file's header.
    pub header: RecordingHeader,
    /// Batches in the file.
    pub batches: u64,
    /// Records in the file.
    pub records: u64,
    /// Arrival time of the first and last batch, µs.
    pub first_arrival_us: u64,
    /// Arrival time of the last batch, µs.
    pub last_arrival_us: u64,
    /// Per source, sorted by name.
    pub sources: Vec<SourceStats>,
    /// How far out of event-time order records arrive.
    pub disorder: crate::disorder::Disorder,
}

/// Collects values per source over batches.
#[derive(Default)]
pub struct StatsBuilder {
    values: BTreeMap<SourceId, Vec<u64>>,
    disorder: crate::disorder::DisorderBuilder,
    batches: u64,
    records: u64,
    first: Option<u64>,
    last: u64,
}

impl StatsBuilder {
    /// Adds one batch.
    pub fn add(&mut self, b: &Batch) {
        self.batches += 1;
        self.records += b.records.len() as u64;
        self.first.get_or_insert(b.arrival_us);
        self.last = self.last.max(b.arrival_us);
        self.disorder.add(b);
        for r in &b.records {
            self.values
                .entry(r.source_id())
                .or_default()
                .push(r.index_value());
        }
    }

    /// Finishes the statistics.
    pub fn finish(self, header: RecordingHeader) -> RecordingStats {
        let first = self.first.unwrap_or(0);
        let span_s = ((self.last - first) as f64 / 1e6).max(1e-6);
        let mut sources: Vec<SourceStats> = self
            .values
            .into_iter()
            .map(|(id, mut v)| {
                v.sort_unstable();
                let p = |q| percentile_nearest_rank(&v, q).unwrap_or(0);
                SourceStats {
                    id,
                    name: telemetry::source::describe(id).unwrap_or_else(|| format!("{id:#018x}")),
                    count: v.len() as u64,
                    rate_per_s: v.len() as f64 / span_s,
                    p50: p(0.5),
                    p99: p(0.99),
                    p9999: p(0.9999),
                    max: v.last().copied().unwrap_or(0),
                }
            })
            .collect();
        sources.sort_by(|a, b| a.name.cmp(&b.name));
        RecordingStats {
            header,
            batches: self.batches,
            records: self.records,
            first_arrival_us: first,
            last_arrival_us: self.last,
            sources,
            disorder: self.disorder.finish(),
        }
    }
}

/// Reads a whole recording and computes its statistics.
pub fn stats_of_file(path: &Path) -> Result<RecordingStats, RecordingError> {
    let mut reader = RecordingReader::open(path)?;
    let header = reader.header().clone();
    let mut b = StatsBuilder::default();
    let mut batch = Batch::default();
    while reader.read_into(&mut batch)? {
        b.add(&batch);
    }
    Ok(b.finish(header))
}
