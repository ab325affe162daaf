//! A store you can come back to, through the real `loom-app` binary:
//! two runs append to one store, and a SIGKILLed run loses at most the
//! persist interval.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use loom::SourceId;
use replay::percentile_nearest_rank;
use replay::{connect_with_retry, run_paced as run, ReplayConfig};
use replay::{generate_file, GenConfig, Phase};
use telemetry::{KvOpKind, Record, RecordingReader};
use testing::LoomApp;

/// Records of the recording, by source, in send order (stored bytes).
fn by_source(path: &Path) -> HashMap<u64, Vec<(u64, Vec<u8>)>> {
    let mut out: HashMap<u64, Vec<(u64, Vec<u8>)>> = HashMap::new();
    for b in RecordingReader::open(path).expect("open recording") {
        for r in &b.expect("read batch").records {
            let mut bytes = Vec::new();
            r.encode_into(&mut bytes);
            out.entry(r.source_id())
                .or_default()
                .push((r.timestamp_us(), bytes));
        }
    }
    out
}

fn kv_read_latencies(path: &Path) -> Vec<u64> {
    let mut v = Vec::new();
    for b in RecordingReader::open(path).expect("open recording") {
        for r in &b.expect("read batch").records {
            if let Record::KvOp(k) = r {
                if k.op == KvOpKind::Read {
                    v.push(k.duration_us);
                }
            }
        }
    }
    v
}

fn start_app(store: &Path, extra: &[&str]) -> LoomApp {
    LoomApp::builder()
        .args(["--query", "probe-effect"])
        .args(extra.iter().copied())
        .store(store)
        .start()
}

fn replay_into(addr: &str, rec: &Path, speed: f64) -> std::thread::JoinHandle<()> {
    let cfg = ReplayConfig {
        file_path: rec.to_path_buf(),
        addr: addr.to_string(),
        duration_s: None,
        speed,
        no_wait: false,
        connect_timeout_s: 60.0,
        loops: None,
    };
    std::thread::spawn(move || {
        let stream = connect_with_retry(&cfg.addr, 60.0, |_| {}).expect("connect");
        // A killed endpoint ends the replay with an error: expected.
        let _ = run(&cfg, stream, |_| {}, || false);
    })
}

fn recording(dir: &Path, name: &str, rate: f64, duration_s: f64, seed: u64) -> PathBuf {
    let rec = dir.join(name);
    let cfg = GenConfig {
        phase: Phase::P2,
        duration_s,
        rate,
        seed,
        ..GenConfig::default()
    };
    generate_file(&cfg, &rec).expect("generate a recording");
    rec
}

#[test]
fn two_runs_append_to_one_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = recording(dir.path(), "p2", 3_000.0, 8.0, 7);
    let store = dir.path().join("store");
    let sent: u64 = by_source(&rec).values().map(|v| v.len() as u64).sum();
    let mut outputs = Vec::new();
    for _ in 0..2 {
        let app = start_app(
            &store,
            &["--timestamps", "event", "--stop-after-connections", "1"],
        );
        replay_into(&app.tcp(), &rec, 20.0).join().expect("replay");
        let end = app.wait();
        assert!(end.success());
        outputs.push(end.lines);
    }
    let second = outputs[1].join("\n");
    assert!(second.contains("reopened "), "{second}");
    assert!(second.contains("recovered kv op=read: "), "{second}");
    assert!(second.contains("dropped: nothing"), "{second}");

    let r = loom::open_read_only(&store).expect("open the store read-only");
    let snap = r.snapshot();
    let total: u64 = snap.sources().iter().map(|&id| snap.record_count(id)).sum();
    assert_eq!(total, 2 * sent, "both runs' records are in the store");
    // The second run continues after the first: a window over its time holds
    // exactly one copy of the recording's KV reads.
    let read = SourceId(telemetry::source::kv(KvOpKind::Read));
    let (first, last) = snap.time_span(read).expect("kv reads");
    let mut lat = kv_read_latencies(&rec);
    let one = lat.len() as u64;
    lat.extend(kv_read_latencies(&rec));
    lat.sort_unstable();
    let agg = r.aggregate(read, first, last).expect("aggregate");
    assert_eq!(agg.count, 2 * one);
    assert_eq!(agg.max, lat.last().copied());
    assert_eq!(
        r.percentile(read, first, last, 0.9999).expect("percentile"),
        percentile_nearest_rank(&lat, 0.9999)
    );
    let schema = snap.schema(read).expect("schema persisted");
    assert_eq!(schema.measurement, "kv");
    assert_eq!(schema.tag("op"), Some("read"));
}

/// A small deterministic generator for the kill points.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn sigkill_loses_at_most_the_persist_interval() {
    const PERSIST_MS: u64 = 500;
    // Records wait this long (event time, here about wall time) in the
    // reorder stage before they are stored: part of the loss bound.
    const REORDER_MS: u64 = 100;
    let rounds: u32 = std::env::var("LOOM_APP_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let mut seed: u64 = std::env::var("LOOM_APP_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    println!("kill points from LOOM_APP_CRASH_SEED={seed} ({rounds} rounds)");
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = recording(dir.path(), "p2", 40_000.0, 12.0, 11);
    let sources = by_source(&rec);
    for round in 0..rounds {
        let store = dir.path().join(format!("store-{round}"));
        let app = start_app(
            &store,
            &[
                "--timestamps",
                "event",
                "--event-offset-us",
                "0",
                "--persist-interval-ms",
                &PERSIST_MS.to_string(),
                "--reorder-window-ms",
                &REORDER_MS.to_string(),
                "--report-interval-s",
                "0.1",
            ],
        );
        let mut app = app;
        let replay = replay_into(&app.tcp(), &rec, 1.0);
        let wait_ms = 1500 + next(&mut seed) % 3000;
        std::thread::sleep(Duration::from_millis(wait_ms));
        let killed_at = Instant::now();
        // Child::kill sends SIGKILL.
        app.process.kill();
        let _ = replay.join();
        // Records received by each progress line, and when it was read.
        let progress: Vec<(Instant, u64)> = app
            .process
            .timed_lines_so_far()
            .into_iter()
            .filter_map(|(t, l)| {
                let total = l.split("total received ").nth(1)?;
                Some((t, total.split_whitespace().next()?.parse().ok()?))
            })
            .collect();
        let received_at_kill = progress.last().map_or(0, |p| p.1);
        // Every record received a persist interval plus the reorder window
        // (plus scheduling slack) before the kill was persisted.
        let bound_time = killed_at - Duration::from_millis(PERSIST_MS + REORDER_MS + 300);
        let must_have = progress
            .iter()
            .filter(|(t, _)| *t <= bound_time)
            .map(|p| p.1)
            .max()
            .unwrap_or(0);

        let (w, r) = loom::open(&store, loom::Config::default()).expect("reopen after SIGKILL");
        let snap = r.snapshot();
        let mut recovered = 0u64;
        for (&id, sent) in &sources {
            let n = snap.record_count(SourceId(id)) as usize;
            recovered += n as u64;
            // Exactly the first n records of the source, in order.
            let mut got = Vec::new();
            if n > 0 {
                r.scan(SourceId(id), 0, u64::MAX, |t, b| got.push((t, b.to_vec())))
                    .expect("scan");
            }
            assert_eq!(got.len(), n);
            assert!(
                got[..] == sent[..n],
                "source {id:#x} is not an exact prefix"
            );
            if let Some(ix_field) = snap.schema(SourceId(id)).and_then(|s| s.index_field()) {
                let want_max = got
                    .iter()
                    .filter_map(|(_, b)| match ix_field.read(b) {
                        Some(loom::Value::Unsigned(v)) => Some(v),
                        _ => None,
                    })
                    .max();
                let agg = r.aggregate(SourceId(id), 0, u64::MAX).expect("aggregate");
                assert_eq!(agg.count, n as u64);
                assert_eq!(agg.max, want_max);
            }
        }
        println!(
            "round {round}: killed {wait_ms} ms into the replay; received {received_at_kill}, recovered {recovered}, lost {}, persisted bound {must_have}",
            received_at_kill.saturating_sub(recovered)
        );
        assert!(
            recovered >= must_have,
            "round {round} (seed above): recovered {recovered} < {must_have} received more than {} ms before the kill",
            PERSIST_MS + REORDER_MS
        );
        assert!(w.recovery().skipped.is_empty(), "{:?}", w.recovery());
        w.close().expect("close");
    }
}
