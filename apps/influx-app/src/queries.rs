//! The named questions (the `questions` crate's statements) asked of
//! influxd, answered in loom-app's output shapes.
//!
//! Windows are `[t0, t1]` in µs since the Unix epoch, inclusive; a point of
//! µs `t` is stored at `t·1000 + k` ns (see [`crate::points`]), which the
//! statements' ns bounds `time >= t0·1000 AND time <= t1·1000 + 999` select.

use std::time::{Duration, Instant};

pub use questions::Query;
use questions::{ABLATION_ABOVE_US, KV_READS, SENDTO};

use crate::client::{value_u64, Client, Table};
use crate::error::{Error, Result};

/// Half width of valkey-p3's packet window around the slowest read, ns.
pub const AROUND_NS: u64 = 5_000_000_000;

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
        let p = self
            .one(questions::percentile(from_where, t0, t1))
            .await?
            .first_u64("percentile");
        let Some(p) = p else { return Ok((None, 0)) };
        let n = self
            .one(questions::count_above(from_where, p, t0, t1))
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
            let (what, from) = if q == Query::RocksdbP1 {
                ("KV read", KV_READS)
            } else {
                ("pread64", questions::PREAD64)
            };
            Ok(latency(
                &a.one(questions::latency(from, t0, t1)).await?,
                what,
            ))
        }
        Query::RocksdbP3 => {
            let n = a
                .one(questions::page_cache_count(t0, t1))
                .await?
                .first_u64("count")
                .unwrap_or(0);
            Ok((format!("page-cache events: {n}"), format!("count={n}")))
        }
        Query::AblationNoindex
        | Query::AblationOnlytime
        | Query::AblationOnlyrange
        | Query::AblationTimerange => {
            let n = a
                .one(questions::ablation_count(t0, t1))
                .await?
                .first_u64("count")
                .unwrap_or(0);
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
            let t = a.one(questions::slowest(KV_READS, t0, t1)).await?;
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
