//! The named questions, asked as InfluxQL statements (the `questions`
//! crate) through the same parse → plan → execute path as the HTTP
//! endpoint, on one snapshot per question so its statements agree while
//! ingest continues.

mod asker;
mod valkey;

use std::time::{Duration, Instant};

use loom::{IndexMode, Reader};
pub use questions::Query;
use questions::{KV_READS, PREAD64};

use asker::Asker;

/// The index mode an ablation question runs its count through.
pub fn ablation_mode(q: Query) -> Option<IndexMode> {
    match q {
        Query::AblationNoindex => Some(IndexMode::NoIndex),
        Query::AblationOnlytime => Some(IndexMode::TimeOnly),
        Query::AblationOnlyrange => Some(IndexMode::RangeOnly),
        Query::AblationTimerange => Some(IndexMode::TimeRange),
        _ => None,
    }
}

/// One answer: a line for people, a `ANSWER ...` line for machines, and how
/// long the query took.
pub struct Answer {
    /// Human-readable answer.
    pub text: String,
    /// Machine-readable `key=value` fields.
    pub machine: String,
    /// Wall time of the query (every statement, parse to result).
    pub latency: Duration,
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

fn latency_answer(a: &mut Asker, from_where: &str, what: &str, t0: u64, t1: u64) -> Parts {
    let row = a.one(questions::latency(from_where, t0, t1))?;
    let count = row.u64("count").unwrap_or(0);
    let (max, p) = (row.u64("max"), row.u64("percentile"));
    Ok((
        format!(
            "{what} latency max: {} µs, p99.99: {} µs ({count} records)",
            opt(max),
            opt(p)
        ),
        format!("count={count} max={} p9999={}", opt(max), opt(p)),
    ))
}

/// (text, machine) parts of an answer.
type Parts = influxql::Result<(String, String)>;

fn ablation_answer(a: &mut Asker, t0: u64, t1: u64) -> Parts {
    let n = a
        .one(questions::ablation_count(t0, t1))?
        .u64("count")
        .unwrap_or(0);
    let chunks = a.chunks_read();
    Ok((
        format!(
            "KV reads slower than {} µs: {n}, chunks read: {chunks}",
            questions::ABLATION_ABOVE_US
        ),
        format!("count={n} chunks_read={chunks}"),
    ))
}

/// Runs `q` over `[t0, t1]` (µs, inclusive). `None` for `probe-effect`.
pub fn run(reader: &Reader, q: Query, t0: u64, t1: u64) -> Option<influxql::Result<Answer>> {
    let start = Instant::now();
    let snap = reader.snapshot();
    let mut a = Asker::new(&snap, ablation_mode(q).unwrap_or(IndexMode::TimeRange));
    let r = match q {
        Query::ProbeEffect => return None,
        Query::RocksdbP1 => latency_answer(&mut a, KV_READS, "KV read", t0, t1),
        Query::RocksdbP2 => latency_answer(&mut a, PREAD64, "pread64", t0, t1),
        Query::RocksdbP3 => a
            .one(questions::page_cache_count(t0, t1))
            .map(|row| row.u64("count").unwrap_or(0))
            .map(|n| (format!("page-cache events: {n}"), format!("count={n}"))),
        Query::ValkeyP1 => valkey::p1(&mut a, t0, t1),
        Query::ValkeyP2 => valkey::p2(&mut a, t0, t1),
        Query::ValkeyP3 => valkey::p3(&mut a, t0, t1),
        Query::AblationNoindex
        | Query::AblationOnlytime
        | Query::AblationOnlyrange
        | Query::AblationTimerange => ablation_answer(&mut a, t0, t1),
    };
    Some(r.map(|(text, machine)| Answer {
        text,
        machine,
        latency: start.elapsed(),
    }))
}
