//! The Valkey questions, end to end: a live P3 recording made here (real
//! server, real probes) is replayed into the real `loom-app` (event
//! timestamps, one fixed window), and its valkey-p1..p3 answers equal brute
//! force over the same recording: the slowest read and exactly the packets
//! within ±5 s of it, all of the server's port.
//!
//! Brute force stores each record as loom-app does with `--timestamps
//! event --reorder-window-ms 0`: at its own time, also when it arrives
//! older than its source's newest stored record (requests of several
//! clients interleave): such a record is late, stored in a late sibling of
//! its series that every query includes, and counted as late stored.
//!
//! Needs root, redis-server or valkey-server, and the `loom-app` binary next
//! to this test's profile directory (`cargo build --release -p loom-app`, or
//! `make test`).

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

mod common;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use replay::{connect_with_retry, run_paced as run, ReplayConfig};
use telemetry::{KvOpKind, Packet, Record};
use testing::LoomApp;
use valkey_workload::{Destination, RunSettings, WorkloadConfig};

const T0: u64 = 2_000_000;
const T1: u64 = 7_000_000;
const PACKET_WINDOW_US: u64 = 5_000_000;

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// (count, p99.99, slower than it) of `sorted` latencies.
fn tail(sorted: &[u64]) -> (String, String, String) {
    // loom-app asks InfluxQL's percentile(): InfluxDB 1.x's rank rule.
    let p = influxql::influx_rank(sorted.len() as u64, 99.99).map(|r| sorted[r as usize - 1]);
    let slower = p.map_or(0, |p| sorted.iter().filter(|&&d| d > p).count());
    (sorted.len().to_string(), show(p), slower.to_string())
}

#[derive(Default)]
struct Stored {
    /// (stored ts, latency) of KV reads.
    reads: Vec<(u64, u64)>,
    /// (stored ts, latency) of syscalls by number.
    syscalls: HashMap<u32, Vec<(u64, u64)>>,
    /// (stored ts, packet).
    packets: Vec<(u64, Packet)>,
    total: u64,
    /// Older than their source's newest earlier record: stored late.
    late: u64,
}

/// Every record at the timestamp loom-app stores it under (see the module doc).
fn stored(batches: &[telemetry::Batch]) -> Stored {
    let mut last: HashMap<u64, u64> = HashMap::new();
    let mut s = Stored::default();
    for b in batches {
        for r in &b.records {
            s.total += 1;
            let prev = last.entry(r.source_id()).or_insert(0);
            let ts = r.timestamp_us();
            if ts < *prev {
                s.late += 1;
            }
            *prev = (*prev).max(ts);
            match r {
                Record::KvOp(k) if k.op == KvOpKind::Read => s.reads.push((ts, k.duration_us)),
                Record::Syscall(c) => s
                    .syscalls
                    .entry(c.nr)
                    .or_default()
                    .push((ts, c.duration_us)),
                Record::Packet(p) => s.packets.push((ts, *p)),
                _ => {}
            }
        }
    }
    s
}

fn in_window(v: &[(u64, u64)]) -> Vec<u64> {
    let mut d: Vec<u64> = v
        .iter()
        .filter(|(ts, _)| (T0..=T1).contains(ts))
        .map(|&(_, d)| d)
        .collect();
    d.sort_unstable();
    d
}

#[test]
fn valkey_questions_match_brute_force_over_a_live_recording() {
    common::require_root_and_server();
    // Fails fast, before the live run, when loom-app is not built.
    testing::binary("loom-app");
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("valkey-p3");
    let config = WorkloadConfig {
        records: 20_000,
        clients: 4,
        syscalls: true,
        packets: true,
        run: RunSettings {
            duration: Duration::from_secs(9),
            warmup: Duration::from_secs(1),
            destination: Destination::Recording(rec.clone()),
            ..WorkloadConfig::default().run
        },
        ..WorkloadConfig::default()
    };
    let summary = valkey_workload::run(config, &AtomicBool::new(false), |_| {}, |_| {})
        .unwrap_or_else(|e| panic!("workload: {e}"));
    assert_eq!(summary.run.dropped(), 0, "{summary:?}");
    let (_, batches) = common::read_recording(&rec);
    let truth = stored(&batches);
    assert_eq!(truth.total, summary.run.sent());

    let window = format!("{T0},{T1}");
    // Recorded times as they are, and no reorder stage: records that come
    // out of order are stored late at their own time, as the brute force
    // above models.
    let app = LoomApp::builder()
        .event_times()
        .args([
            "--reorder-window-ms",
            "0",
            "--query",
            "valkey-p1,valkey-p2,valkey-p3",
            "--query-at-end",
            "--query-window-us",
            &window,
            "--stop-after-connections",
            "1",
            "--machine-output",
            "--report-interval-s",
            "5",
        ])
        .deep_queue()
        .store(&dir.path().join("store"))
        .start();
    let addr = app.tcp();
    let replay_cfg = ReplayConfig {
        file_path: rec.clone(),
        addr,
        duration_s: None,
        speed: 2.0,
        no_wait: false,
        connect_timeout_s: 60.0,
        loops: None,
    };
    let stream = connect_with_retry(&replay_cfg.addr, 60.0, |_| {}).expect("connect");
    let sent = run(&replay_cfg, stream, |_| {}, || false).expect("replay");
    assert_eq!(sent.records, truth.total);
    let end = app.wait();
    let (rest, all) = (&end.lines, end.all());
    assert!(end.success(), "loom-app failed: {}\n{all}", end.status);
    let find = |prefix: &str| testing::line_fields(rest, prefix);
    let stats = find("STATS ");
    assert_eq!(
        stats["dropped"], "0",
        "loom-app dropped data; answers not comparable\n{all}"
    );
    assert_eq!(stats["ingested"], truth.total.to_string(), "{all}");
    assert!(
        all.contains(&format!(
            "late refused 0, late stored at their own time {}",
            truth.late
        )),
        "{all}"
    );
    eprintln!(
        "{}",
        rest.iter()
            .filter(|l| l.starts_with("ANSWER") || l.starts_with("Query Latency"))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );

    // P1: reads slower than the window's p99.99.
    let reads = in_window(&truth.reads);
    assert!(reads.len() > 10_000, "{} reads in the window", reads.len());
    let (count, p, slow) = tail(&reads);
    let p1 = find("ANSWER query=valkey-p1 ");
    assert_eq!(
        (&p1["count"], &p1["p9999"], &p1["slow"]),
        (&count, &p, &slow),
        "{p1:?}"
    );

    // P2: the same, plus sendto and write against their own p99.99.
    let p2 = find("ANSWER query=valkey-p2 ");
    assert_eq!(
        (&p2["count"], &p2["p9999"], &p2["slow"]),
        (&count, &p, &slow),
        "{p2:?}"
    );
    for (name, nr) in [("sendto", 44u32), ("write", 1)] {
        let v = in_window(truth.syscalls.get(&nr).map_or(&[][..], |v| v));
        let (c, p, s) = tail(&v);
        let key = |k: &str| p2[&format!("{name}_{k}")].clone();
        assert_eq!(
            (key("count"), key("p9999"), key("slow")),
            (c, p, s),
            "{name}: {p2:?}"
        );
    }
    assert_ne!(p2["write_count"], "0", "the server replies with write(2)");

    // P3: the slowest read (earliest stored if tied) and the packets around it.
    let max = *reads.last().expect("reads");
    let at = truth
        .reads
        .iter()
        .filter(|&&(ts, d)| (T0..=T1).contains(&ts) && d == max)
        .map(|&(ts, _)| ts)
        .min()
        .expect("the slowest read");
    let (lo, hi) = (at.saturating_sub(PACKET_WINDOW_US), at + PACKET_WINDOW_US);
    let around: Vec<&Packet> = truth
        .packets
        .iter()
        .filter(|(ts, _)| (lo..=hi).contains(ts))
        .map(|(_, p)| p)
        .collect();
    assert!(!around.is_empty());
    let bytes: u64 = around.iter().map(|p| u64::from(p.length)).sum();
    let p3 = find("ANSWER query=valkey-p3 ");
    assert_eq!(p3["slowest_us"], max.to_string(), "{p3:?}");
    assert_eq!(p3["at"], at.to_string(), "{p3:?}");
    assert_eq!(p3["packets"], around.len().to_string(), "{p3:?}");
    assert_eq!(p3["bytes"], bytes.to_string(), "{p3:?}");
    assert_eq!(p3["port"], summary.port.to_string(), "{p3:?}");
    assert_eq!(p3["port_packets"], p3["packets"], "{p3:?}");
}
