//! The workload questions as InfluxQL statements of the shared data model,
//! asked of influxd, answered in loom-app's output shapes.
//!
//! Windows are `[t0, t1]` in µs since the Unix epoch, inclusive; a point of
//! µs `t` is stored at `t·1000 + k` ns (see [`crate::points`]), so the ns
//! predicate is `time >= t0·1000 AND time <= t1·1000 + 999`.

use std::time::{Duration, Instant};

use crate::client::{value_u64, Client, Table};
use crate::error::{Error, Result};

/// Which questions to ask (the names loom-app accepts, plus the Valkey ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Query {
    /// Max and p99.99 KV read latency.
    RocksdbP1,
    /// Max and p99.99 `pread64` latency.
    RocksdbP2,
    /// Count of page-cache events.
    RocksdbP3,
    /// KV reads slower than the window's p99.99 of KV reads.
    ValkeyP1,
    /// valkey-p1, plus `sendto` calls slower than their p99.99.
    ValkeyP2,
    /// The slowest KV read, then the packets within ±5 s of it.
    ValkeyP3,
    /// Count of KV reads slower than 80 µs (InfluxDB has one plan for all
    /// four ablation names: its own TSM index).
    AblationNoindex,
    /// Same statement as ablation-noindex.
    AblationOnlytime,
    /// Same statement as ablation-noindex.
    AblationOnlyrange,
    /// Same statement as ablation-noindex.
    AblationTimerange,
    /// Write only; no queries.
    ProbeEffect,
}

/// Percentile asked by the phase questions (InfluxQL takes percent).
pub const PERCENT: f64 = 99.99;
/// "Slow" for the ablation count: latency > 80 µs.
pub const ABLATION_ABOVE_US: u64 = 80;
/// Half width of valkey-p3's packet window around the slowest read, ns.
pub const AROUND_NS: u64 = 5_000_000_000;

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
}

/// One answer: a line for people, `key=value` fields for the `ANSWER` line,
/// the statements sent and the wall time of all round trips.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Human-readable answer (loom-app's wording).
    pub text: String,
    /// Machine-readable `key=value` fields.
    pub machine: String,
    /// The InfluxQL statements, in the order sent.
    pub statements: Vec<String>,
    /// Wall time of the round trips to influxd.
    pub latency: Duration,
}

/// The ns time predicate of the µs window `[t0, t1]`.
pub fn time_range(t0_us: u64, t1_us: u64) -> String {
    format!(
        "time >= {} AND time <= {}",
        t0_us.saturating_mul(1000),
        t1_us.saturating_mul(1000).saturating_add(999)
    )
}

/// The latency statement of P1/P2: count, max and p99.99 of `duration_us`
/// of one series (`from` = `kv WHERE op = 'read'`). `count` is the data
/// model's P1 plus the record count loom-app also prints.
pub fn latency_statement(from_where: &str, t0: u64, t1: u64) -> String {
    format!(
        "SELECT count(duration_us), max(duration_us), percentile(duration_us, {PERCENT}) FROM {from_where} AND {}",
        time_range(t0, t1)
    )
}

const KV_READS: &str = "kv WHERE op = 'read'";
// `name` is an InfluxQL keyword: the tag must be written as a quoted
// identifier (`WHERE name = ...` is a parse error in influxd 1.6).
const PREAD64: &str = "syscall WHERE \"name\" = 'pread64'";
const SENDTO: &str = "syscall WHERE \"name\" = 'sendto'";

/// The single statement of a one-statement question, `None` for the
/// multi-step Valkey questions and probe-effect.
pub fn statement(q: Query, t0: u64, t1: u64) -> Option<String> {
    Some(match q {
        Query::RocksdbP1 => latency_statement(KV_READS, t0, t1),
        Query::RocksdbP2 => latency_statement(PREAD64, t0, t1),
        Query::RocksdbP3 => format!(
            "SELECT count(pfn) FROM pagecache WHERE {}",
            time_range(t0, t1)
        ),
        Query::AblationNoindex
        | Query::AblationOnlytime
        | Query::AblationOnlyrange
        | Query::AblationTimerange => format!(
            "SELECT count(duration_us) FROM {KV_READS} AND duration_us > {ABLATION_ABOVE_US} AND {}",
            time_range(t0, t1)
        ),
        Query::ValkeyP1 | Query::ValkeyP2 | Query::ValkeyP3 | Query::ProbeEffect => return None,
    })
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

struct Asker<'a> {
    client: &'a Client,
    statements: Vec<String>,
}

impl Asker<'_> {
    async fn one(&mut self, s: String) -> Result<Table> {
        let mut t = self.client.query(&s).await?;
        self.statements.push(s.clone());
        if t.len() != 1 {
            return Err(Error::Answer {
                what: s,
                message: format!("{} results for one statement", t.len()),
            });
        }
        Ok(t.remove(0))
    }

    /// Count of `from_where` slower than its own p99.99 in the window:
    /// `(p, count)`, `(None, 0)` without records.
    async fn slower_than_p9999(
        &mut self,
        from_where: &str,
        t0: u64,
        t1: u64,
    ) -> Result<(Option<u64>, u64)> {
        let range = time_range(t0, t1);
        let p = self
            .one(format!(
                "SELECT percentile(duration_us, {PERCENT}) FROM {from_where} AND {range}"
            ))
            .await?
            .first_u64("percentile");
        let Some(p) = p else { return Ok((None, 0)) };
        let n = self
            .one(format!(
                "SELECT count(duration_us) FROM {from_where} AND duration_us > {p} AND {range}"
            ))
            .await?
            .first_u64("count")
            .unwrap_or(0);
        Ok((Some(p), n))
    }
}

/// Asks `q` over `[t0, t1]` (µs, inclusive). `None` for `probe-effect`.
pub async fn run(client: &Client, q: Query, t0: u64, t1: u64) -> Option<Result<Answer>> {
    if q == Query::ProbeEffect {
        return None;
    }
    let start = Instant::now();
    let mut a = Asker {
        client,
        statements: Vec::new(),
    };
    let r = answer(&mut a, q, t0, t1).await;
    Some(r.map(|(text, machine)| Answer {
        text,
        machine,
        statements: a.statements,
        latency: start.elapsed(),
    }))
}

async fn answer(a: &mut Asker<'_>, q: Query, t0: u64, t1: u64) -> Result<(String, String)> {
    let latency = |t: &Table, what: &str| {
        let count = t.first_u64("count").unwrap_or(0);
        let (max, p) = (t.first_u64("max"), t.first_u64("percentile"));
        (
            format!(
                "{what} latency max: {} µs, p99.99: {} µs ({count} records)",
                opt(max),
                opt(p)
            ),
            format!("count={count} max={} p9999={}", opt(max), opt(p)),
        )
    };
    match q {
        Query::RocksdbP1 | Query::RocksdbP2 => {
            let what = if q == Query::RocksdbP1 {
                "KV read"
            } else {
                "pread64"
            };
            let s = statement(q, t0, t1).unwrap_or_default();
            Ok(latency(&a.one(s).await?, what))
        }
        Query::RocksdbP3 => {
            let s = statement(q, t0, t1).unwrap_or_default();
            let n = a.one(s).await?.first_u64("count").unwrap_or(0);
            Ok((format!("page-cache events: {n}"), format!("count={n}")))
        }
        Query::AblationNoindex
        | Query::AblationOnlytime
        | Query::AblationOnlyrange
        | Query::AblationTimerange => {
            let s = statement(q, t0, t1).unwrap_or_default();
            let n = a.one(s).await?.first_u64("count").unwrap_or(0);
            Ok((
                format!("KV reads slower than {ABLATION_ABOVE_US} µs: {n}"),
                format!("count={n}"),
            ))
        }
        Query::ValkeyP1 | Query::ValkeyP2 => {
            let (p, n) = a.slower_than_p9999(KV_READS, t0, t1).await?;
            let mut text = format!("KV reads slower than their p99.99 ({} µs): {n}", opt(p));
            let mut machine = format!("p9999={} count={n}", opt(p));
            if q == Query::ValkeyP2 {
                let (sp, sn) = a.slower_than_p9999(SENDTO, t0, t1).await?;
                text.push_str(&format!(
                    "; sendto calls slower than their p99.99 ({} µs): {sn}",
                    opt(sp)
                ));
                machine.push_str(&format!(" sendto_p9999={} sendto_count={sn}", opt(sp)));
            }
            Ok((text, machine))
        }
        Query::ValkeyP3 => {
            // max() alone is a selector: its row's time is the slowest read's.
            let t = a
                .one(format!(
                    "SELECT max(duration_us) FROM {KV_READS} AND {}",
                    time_range(t0, t1)
                ))
                .await?;
            let (Some(max), Some(at_ns)) =
                (t.first_u64("max"), t.get(0, "time").and_then(value_u64))
            else {
                return Ok((
                    "slowest KV read: none; packets within ±5 s: 0".into(),
                    "max=none max_time_us=none packets=0".into(),
                ));
            };
            let n = a
                .one(format!(
                    "SELECT count(length) FROM packet WHERE time >= {} AND time <= {}",
                    at_ns.saturating_sub(AROUND_NS),
                    at_ns.saturating_add(AROUND_NS)
                ))
                .await?
                .first_u64("count")
                .unwrap_or(0);
            let at_us = at_ns / 1000;
            Ok((
                format!("slowest KV read: {max} µs at {at_us} µs; packets within ±5 s: {n}"),
                format!("max={max} max_time_us={at_us} packets={n}"),
            ))
        }
        Query::ProbeEffect => Ok((String::new(), String::new())),
    }
}

/// The element InfluxDB 1.x `percentile(field, percent)` returns from `n`
/// sorted values: 0-based index `floor(n·percent/100 + 0.5) − 1` (the
/// nearest rank, rounded half up), `None` when that is outside `0..n`.
/// Loom's percentile takes rank `ceil(n·q)` instead: the two differ by one
/// rank when the fractional part of `n·percent/100` is in (0, 0.5).
pub fn influx_percentile_index(n: usize, percent: f64) -> Option<usize> {
    let i = (n as f64 * percent / 100.0 + 0.5).floor() as i64 - 1;
    (i >= 0 && (i as usize) < n).then_some(i as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_use_the_data_model() {
        assert_eq!(
            statement(Query::RocksdbP1, 1, 2).unwrap(),
            "SELECT count(duration_us), max(duration_us), percentile(duration_us, 99.99) FROM kv WHERE op = 'read' AND time >= 1000 AND time <= 2999"
        );
        assert!(statement(Query::RocksdbP2, 0, 0)
            .unwrap()
            .contains("FROM syscall WHERE \"name\" = 'pread64' AND"));
        assert_eq!(
            statement(Query::RocksdbP3, 5, 5).unwrap(),
            "SELECT count(pfn) FROM pagecache WHERE time >= 5000 AND time <= 5999"
        );
        assert_eq!(
            statement(Query::AblationTimerange, 0, 1).unwrap(),
            "SELECT count(duration_us) FROM kv WHERE op = 'read' AND duration_us > 80 AND time >= 0 AND time <= 1999"
        );
        assert!(statement(Query::ProbeEffect, 0, 1).is_none());
    }

    #[test]
    fn influx_percentile_rule() {
        // 10 000 values: rank 9 999 by both rules.
        assert_eq!(influx_percentile_index(10_000, 99.99), Some(9_998));
        // 6 000 values: n·0.9999 = 5 999.4 → InfluxDB rank 5 999, Loom ceil 6 000.
        assert_eq!(influx_percentile_index(6_000, 99.99), Some(5_998));
        assert_eq!(influx_percentile_index(1, 99.99), Some(0));
        assert_eq!(influx_percentile_index(0, 99.99), None);
        assert_eq!(influx_percentile_index(4, 10.0), None);
    }
}
