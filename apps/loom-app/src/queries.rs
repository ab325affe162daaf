//! The workload questions asked of the store.

mod valkey;

use std::time::{Duration, Instant};

use loom::{IndexMode, Reader, SourceId};
use telemetry::{source, KvOpKind, Syscall};

/// Which questions to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Query {
    /// Max and p99.99 KV read latency.
    RocksdbP1,
    /// Max and p99.99 `pread64` latency.
    RocksdbP2,
    /// Count of page-cache events.
    RocksdbP3,
    /// KV reads slower than their p99.99.
    ValkeyP1,
    /// P1 plus `sendto` (and `write`) calls slower than their p99.99.
    ValkeyP2,
    /// The slowest KV read and the packets within ±5 s of it.
    ValkeyP3,
    /// Count of KV reads slower than 80 µs, no index.
    AblationNoindex,
    /// Same, time index only.
    AblationOnlytime,
    /// Same, range index only.
    AblationOnlyrange,
    /// Same, time and range index.
    AblationTimerange,
    /// Ingest and index only; no queries.
    ProbeEffect,
}

/// Lower bound of "slow" for the ablation count: latency > 80 µs.
pub const ABLATION_MIN_US: u64 = 81;

impl Query {
    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Query::RocksdbP1 => "rocksdb-p1",
            Query::RocksdbP2 => "rocksdb-p2",
            Query::RocksdbP3 => "rocksdb-p3",
            Query::ValkeyP1 => "valkey-p1",
            Query::ValkeyP2 => "valkey-p2",
            Query::ValkeyP3 => "valkey-p3",
            Query::AblationNoindex => "ablation-noindex",
            Query::AblationOnlytime => "ablation-onlytime",
            Query::AblationOnlyrange => "ablation-onlyrange",
            Query::AblationTimerange => "ablation-timerange",
            Query::ProbeEffect => "probe-effect",
        }
    }

    /// The index mode of an ablation query.
    pub fn ablation_mode(self) -> Option<IndexMode> {
        match self {
            Query::AblationNoindex => Some(IndexMode::NoIndex),
            Query::AblationOnlytime => Some(IndexMode::TimeOnly),
            Query::AblationOnlyrange => Some(IndexMode::RangeOnly),
            Query::AblationTimerange => Some(IndexMode::TimeRange),
            _ => None,
        }
    }
}

/// One answer: a line for people, a `ANSWER ...` line for machines, and how
/// long the query took.
pub struct Answer {
    /// Human-readable answer.
    pub text: String,
    /// Machine-readable `key=value` fields.
    pub machine: String,
    /// Wall time of the query.
    pub latency: Duration,
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

fn latency_answer(
    reader: &Reader,
    id: u64,
    what: &str,
    t0: u64,
    t1: u64,
) -> loom::Result<(String, String)> {
    let agg = match reader.aggregate(SourceId(id), t0, t1) {
        Err(loom::Error::UnknownSource(_)) => None,
        other => Some(other?),
    };
    let p = match reader.percentile(SourceId(id), t0, t1, 0.9999) {
        Err(loom::Error::UnknownSource(_)) => None,
        other => other?,
    };
    let count = agg.map_or(0, |a| a.count);
    let max = agg.and_then(|a| a.max);
    Ok((
        format!(
            "{what} latency max: {} µs, p99.99: {} µs ({count} records)",
            opt(max),
            opt(p)
        ),
        format!("count={count} max={} p9999={}", opt(max), opt(p)),
    ))
}

/// Runs `q` over `[t0, t1]` (µs, inclusive). `None` for `probe-effect`.
pub fn run(reader: &Reader, q: Query, t0: u64, t1: u64) -> Option<loom::Result<Answer>> {
    let start = Instant::now();
    let r = match q {
        Query::ProbeEffect => return None,
        Query::ValkeyP1 => valkey::p1(&reader.snapshot(), t0, t1),
        Query::ValkeyP2 => valkey::p2(&reader.snapshot(), t0, t1),
        Query::ValkeyP3 => valkey::p3(&reader.snapshot(), t0, t1),
        Query::RocksdbP1 => latency_answer(reader, source::kv(KvOpKind::Read), "KV read", t0, t1),
        Query::RocksdbP2 => {
            latency_answer(reader, source::syscall(Syscall::PREAD64), "pread64", t0, t1)
        }
        Query::RocksdbP3 => match reader.count(SourceId(source::page_cache()), t0, t1) {
            Ok(n) => Ok((n, ())),
            Err(loom::Error::UnknownSource(_)) => Ok((0, ())),
            Err(e) => Err(e),
        }
        .map(|(n, ())| (format!("page-cache events: {n}"), format!("count={n}"))),
        _ => {
            let mode = q.ablation_mode()?;
            match reader.count_matching(
                SourceId(source::kv(KvOpKind::Read)),
                t0,
                t1,
                ABLATION_MIN_US,
                u64::MAX,
                mode,
            ) {
                Ok(c) => Ok((
                    format!(
                        "KV reads slower than 80 µs: {}, chunks read: {}",
                        c.count, c.chunks_read
                    ),
                    format!("count={} chunks_read={}", c.count, c.chunks_read),
                )),
                Err(loom::Error::UnknownSource(_)) => Ok((
                    "KV reads slower than 80 µs: 0, chunks read: 0".into(),
                    "count=0 chunks_read=0".into(),
                )),
                Err(e) => Err(e),
            }
        }
    };
    Some(r.map(|(text, machine)| Answer {
        text,
        machine,
        latency: start.elapsed(),
    }))
}
