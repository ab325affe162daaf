//! The Valkey workload's questions (valkey-p1..p3) as InfluxQL statements,
//! each question's statements on one snapshot so its parts agree while
//! ingest continues.
//!
//! - P1: how many KV reads were slower than the window's p99.99?
//! - P2: that, plus how many `sendto` calls were slower than their own
//!   p99.99, and the same for `write` (Redis 7 and Valkey send replies with
//!   `write(2)`, not `sendto(2)`; the published question names `sendto`).
//! - P3: the slowest KV read of the window, then the packets within ±5 s of
//!   it and whether they are the server port's.

use std::collections::HashMap;

use questions::{time_range, KV_READS, SENDTO, WRITE};

use super::asker::Asker;
use super::{opt, Parts};

/// Half-width of the packet window around the slowest read, µs.
pub const PACKET_WINDOW_US: u64 = 5_000_000;
/// Packets sampled for candidate server ports (the probe keeps only the
/// server port's packets, so every sampled packet names it).
const PORT_SAMPLE: u64 = 64;
/// Candidate ports counted over the whole window.
const PORT_CANDIDATES: usize = 4;
/// Half-width of the slice around the slowest read the port sample is
/// taken from, µs: the sample's scan then reads a few chunks, not the
/// whole packet window.
const SAMPLE_SLICE_US: u64 = 50_000;

/// Count in the window, its p99.99, and how many records are slower than it.
struct Tail {
    count: u64,
    p9999: Option<u64>,
    slower: u64,
}

fn tail(a: &mut Asker, from_where: &str, t0: u64, t1: u64) -> influxql::Result<Tail> {
    let row = a.one(questions::percentile(from_where, t0, t1))?;
    let (count, p9999) = (row.u64("count").unwrap_or(0), row.u64("percentile"));
    let slower = match p9999 {
        Some(p) => a
            .one(questions::count_above(from_where, p, t0, t1))?
            .u64("count")
            .unwrap_or(0),
        None => 0,
    };
    Ok(Tail {
        count,
        p9999,
        slower,
    })
}

fn p1_parts(a: &mut Asker, t0: u64, t1: u64) -> Parts {
    let r = tail(a, KV_READS, t0, t1)?;
    Ok((
        format!(
            "KV reads: {}, p99.99: {} µs, slower than p99.99: {}",
            r.count,
            opt(r.p9999),
            r.slower
        ),
        format!("count={} p9999={} slow={}", r.count, opt(r.p9999), r.slower),
    ))
}

/// valkey-p1: KV reads slower than the window's p99.99.
pub fn p1(a: &mut Asker, t0: u64, t1: u64) -> Parts {
    p1_parts(a, t0, t1)
}

/// valkey-p2: P1, plus `sendto` and `write` calls slower than their own p99.99.
pub fn p2(a: &mut Asker, t0: u64, t1: u64) -> Parts {
    let (mut text, mut machine) = p1_parts(a, t0, t1)?;
    for (name, from_where) in [("sendto", SENDTO), ("write", WRITE)] {
        let r = tail(a, from_where, t0, t1)?;
        text.push_str(&format!(
            "; {name}: {}, p99.99: {} µs, slower: {}",
            r.count,
            opt(r.p9999),
            r.slower
        ));
        machine.push_str(&format!(
            " {name}_count={} {name}_p9999={} {name}_slow={}",
            r.count,
            opt(r.p9999),
            r.slower
        ));
    }
    Ok((text, machine))
}

/// The ports of `rows` (`src_port`, `dst_port`), most frequent first
/// (lowest first on a tie), at most [`PORT_CANDIDATES`].
fn candidate_ports(rows: &[super::asker::Row]) -> Vec<u64> {
    let mut per_port: HashMap<u64, u64> = HashMap::new();
    for r in rows {
        let (a, b) = (r.u64("src_port"), r.u64("dst_port"));
        if let Some(a) = a {
            *per_port.entry(a).or_default() += 1;
        }
        if let Some(b) = b.filter(|b| Some(*b) != a) {
            *per_port.entry(b).or_default() += 1;
        }
    }
    let mut ports: Vec<(u64, u64)> = per_port.into_iter().collect();
    ports.sort_by_key(|&(port, n)| (std::cmp::Reverse(n), port));
    ports
        .into_iter()
        .take(PORT_CANDIDATES)
        .map(|(p, _)| p)
        .collect()
}

/// Packets in the window from or to port `p`.
fn packets_of_port(a: &mut Asker, p: u64, around: &str) -> influxql::Result<u64> {
    // dst_port is range-indexed (one bin per port); src_port is not.
    let to = a.one(format!(
        "SELECT count(length) FROM packet WHERE dst_port = {p} AND {around}"
    ))?;
    let from = a.one(format!(
        "SELECT count(length) FROM packet WHERE src_port = {p} AND dst_port != {p} AND {around}"
    ))?;
    Ok(to.u64("count").unwrap_or(0) + from.u64("count").unwrap_or(0))
}

/// valkey-p3: the slowest KV read (earliest if tied) and the packets stored
/// within ±5 s of it, with the server port (the port most packets there
/// share) and how many packets carry it (every one should: the packet probe
/// keeps only the server port's packets).
pub fn p3(a: &mut Asker, t0: u64, t1: u64) -> Parts {
    let row = a.one(questions::slowest(KV_READS, t0, t1))?;
    let (Some(max), Some(at)) = (row.u64("max"), row.time_us()) else {
        return Ok((
            "no KV reads in the window".to_string(),
            "slowest_us=none".to_string(),
        ));
    };
    let (p0, p1) = (
        at.saturating_sub(PACKET_WINDOW_US),
        at.saturating_add(PACKET_WINDOW_US),
    );
    let around = time_range(p0, p1);
    let totals = a.one(format!(
        "SELECT count(length), sum(length) FROM packet WHERE {around}"
    ))?;
    let packets = totals.u64("count").unwrap_or(0);
    let bytes = totals.u64("sum").unwrap_or(0);
    let slice = time_range(
        at.saturating_sub(SAMPLE_SLICE_US),
        at.saturating_add(SAMPLE_SLICE_US),
    );
    let mut sample = a.all(format!(
        "SELECT src_port, dst_port FROM packet WHERE {slice} LIMIT {PORT_SAMPLE}"
    ))?;
    if sample.is_empty() {
        sample = a.all(format!(
            "SELECT src_port, dst_port FROM packet WHERE {around} LIMIT {PORT_SAMPLE}"
        ))?;
    }
    // A sample of one connection's packets names its client port as often
    // as the server's: count each candidate over the whole window. A port
    // on every packet of the window is the most any can have: stop there.
    let mut best: Option<(u64, u64)> = None;
    for p in candidate_ports(&sample) {
        let n = packets_of_port(a, p, &around)?;
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((p, n));
        }
        if n >= packets {
            break;
        }
    }
    let (port, port_packets) = (best.map(|b| b.0), best.map_or(0, |b| b.1));
    let port_text = opt(port);
    Ok((
        format!(
            "slowest KV read: {max} µs at {at} µs; packets in [{p0}, {p1}] µs: {packets} ({bytes} bytes), of port {port_text}: {port_packets}"
        ),
        format!(
            "slowest_us={max} at={at} packets_t0={p0} packets_t1={p1} packets={packets} bytes={bytes} port={port_text} port_packets={port_packets}"
        ),
    ))
}
