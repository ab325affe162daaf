//! The Valkey workload's questions (valkey-p1..p3), each over one snapshot
//! so its parts agree while ingest continues.
//!
//! - P1: how many KV reads were slower than the window's p99.99?
//! - P2: that, plus how many `sendto` calls were slower than their own
//!   p99.99, and the same for `write` (Redis 7 and Valkey send replies with
//!   `write(2)`, not `sendto(2)`; the published question names `sendto`).
//! - P3: the slowest KV read of the window, then the packets within ±5 s of
//!   it and whether they are the server port's.

use std::collections::HashMap;

use loom::{IndexMode, Snapshot, SourceId};
use telemetry::{source, KvOpKind, Packet};

/// x86_64 `sendto`.
pub const SYS_SENDTO: u32 = 44;
/// x86_64 `write`.
pub const SYS_WRITE: u32 = 1;
/// Half-width of the packet window around the slowest read, µs.
pub const PACKET_WINDOW_US: u64 = 5_000_000;
/// The tail quantile the questions compare against.
const TAIL: f64 = 0.9999;

/// (text, machine) parts of an answer.
pub type Parts = (String, String);

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// Treats a source never seen as empty.
fn or_empty<T>(r: loom::Result<T>, empty: T) -> loom::Result<T> {
    match r {
        Err(loom::Error::UnknownSource(_)) => Ok(empty),
        other => other,
    }
}

/// Count in the window, its p99.99, and how many records are slower than it.
struct Tail {
    count: u64,
    p9999: Option<u64>,
    slower: u64,
}

fn tail(s: &Snapshot, id: u64, t0: u64, t1: u64) -> loom::Result<Tail> {
    let id = SourceId(id);
    let count = or_empty(s.aggregate(id, t0, t1).map(|a| a.count), 0)?;
    let p9999 = or_empty(s.percentile(id, t0, t1, TAIL), None)?;
    let slower = match p9999 {
        Some(p) if p < u64::MAX => {
            s.count_matching(id, t0, t1, p + 1, u64::MAX, IndexMode::TimeRange)?
                .count
        }
        _ => 0,
    };
    Ok(Tail {
        count,
        p9999,
        slower,
    })
}

fn p1_parts(s: &Snapshot, t0: u64, t1: u64) -> loom::Result<Parts> {
    let r = tail(s, source::kv(KvOpKind::Read), t0, t1)?;
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
pub fn p1(s: &Snapshot, t0: u64, t1: u64) -> loom::Result<Parts> {
    p1_parts(s, t0, t1)
}

/// valkey-p2: P1, plus `sendto` and `write` calls slower than their own p99.99.
pub fn p2(s: &Snapshot, t0: u64, t1: u64) -> loom::Result<Parts> {
    let (mut text, mut machine) = p1_parts(s, t0, t1)?;
    for (name, nr) in [("sendto", SYS_SENDTO), ("write", SYS_WRITE)] {
        let r = tail(s, source::syscall(nr), t0, t1)?;
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

/// valkey-p3: the slowest KV read (earliest if tied) and the packets stored
/// within ±5 s of it. The server port is the port most packets there share
/// (the packet probe keeps only the server port's packets, so every packet
/// should carry it: `port_packets` = `packets`).
pub fn p3(s: &Snapshot, t0: u64, t1: u64) -> loom::Result<Parts> {
    let reads = SourceId(source::kv(KvOpKind::Read));
    let max = or_empty(s.aggregate(reads, t0, t1).map(|a| a.max), None)?;
    let Some(max) = max else {
        return Ok((
            "no KV reads in the window".to_string(),
            "slowest_us=none".to_string(),
        ));
    };
    let mut at = None;
    s.range_scan(reads, t0, t1, max, max, |ts, _, _| {
        at.get_or_insert(ts);
    })?;
    let Some(at) = at else {
        return Ok((
            "no KV reads in the window".to_string(),
            "slowest_us=none".to_string(),
        ));
    };
    let (p0, p1) = (
        at.saturating_sub(PACKET_WINDOW_US),
        at.saturating_add(PACKET_WINDOW_US),
    );
    let mut packets = 0u64;
    let mut bytes = 0u64;
    let mut ends: Vec<(u16, u16)> = Vec::new();
    or_empty(
        s.scan(SourceId(source::packet()), p0, p1, |_, b| {
            if let Ok(p) = Packet::decode(b) {
                packets += 1;
                bytes += u64::from(p.length);
                ends.push((p.src_port, p.dst_port));
            }
        })
        .map(|_| ()),
        (),
    )?;
    let mut per_port: HashMap<u16, u64> = HashMap::new();
    for &(a, b) in &ends {
        *per_port.entry(a).or_default() += 1;
        if b != a {
            *per_port.entry(b).or_default() += 1;
        }
    }
    let port = per_port
        .iter()
        .max_by_key(|&(port, n)| (*n, std::cmp::Reverse(*port)))
        .map(|(&p, _)| p);
    let port_packets = port.map_or(0, |p| {
        ends.iter().filter(|&&(a, b)| a == p || b == p).count() as u64
    });
    let port_text = port.map_or_else(|| "none".to_string(), |p| p.to_string());
    Ok((
        format!(
            "slowest KV read: {max} µs at {at} µs; packets in [{p0}, {p1}] µs: {packets} ({bytes} bytes), of port {port_text}: {port_packets}"
        ),
        format!(
            "slowest_us={max} at={at} packets_t0={p0} packets_t1={p1} packets={packets} bytes={bytes} port={port_text} port_packets={port_packets}"
        ),
    ))
}
