//! End to end: a synthetic recording replayed at 10x into the real `loom-app`
//! binary (event timestamps), every answer checked against brute force over
//! the recording, while two other connections send garbage and get closed.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use replay::{connect_with_retry, run_paced as run, ReplayConfig};
use replay::{generate_file, GenConfig, Phase};
use telemetry::{KvOpKind, Record, RecordingReader};
use testing::{fields, LoomApp};

const T0: u64 = 3_000_000;
const T1: u64 = 15_000_000;

#[derive(Default)]
struct Truth {
    total: u64,
    /// Records older than their source's newest earlier record (in file
    /// order): stored late, at their own time, without a reorder window.
    late: u64,
    kv_reads: Vec<u64>,
    pread: Vec<u64>,
    page_cache: u64,
    slow_reads: u64,
}

/// Brute force over every record of the recording, each at its own time;
/// `late` counts those older than their source's newest earlier one in
/// file order.
fn brute_force(path: &std::path::Path) -> Truth {
    let mut t = Truth::default();
    let mut newest: HashMap<u64, u64> = HashMap::new();
    for b in RecordingReader::open(path).expect("open recording") {
        let b = b.expect("read batch");
        t.total += b.records.len() as u64;
        for r in &b.records {
            let ts = r.timestamp_us();
            let n = newest.entry(r.source_id()).or_default();
            if ts < *n {
                t.late += 1;
            }
            *n = (*n).max(ts);
            if !(T0..=T1).contains(&ts) {
                continue;
            }
            match r {
                Record::KvOp(k) if k.op == KvOpKind::Read => {
                    t.kv_reads.push(k.duration_us);
                    if k.duration_us > 80 {
                        t.slow_reads += 1;
                    }
                }
                Record::Syscall(s) if s.nr == 17 => t.pread.push(s.duration_us),
                Record::PageCache(_) => t.page_cache += 1,
                _ => {}
            }
        }
    }
    t.kv_reads.sort_unstable();
    t.pread.sort_unstable();
    t
}

fn latency_fields(v: &[u64]) -> (String, String, String) {
    let show = |x: Option<u64>| x.map_or("none".to_string(), |x| x.to_string());
    (
        v.len().to_string(),
        show(v.last().copied()),
        // The named questions run InfluxQL's percentile(): InfluxDB 1.x's rank.
        show(influxql::influx_rank(v.len() as u64, 99.99).map(|r| v[r as usize - 1])),
    )
}

/// Sends `bytes` and waits until the app closes the connection.
fn garbage_connection(addr: &str, bytes: &[u8]) {
    let mut s = TcpStream::connect(addr).expect("connect garbage");
    // The app may close before reading everything; a failed write is fine.
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

#[test]
fn replay_into_loom_app_matches_brute_force_and_survives_garbage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rocksdb-p3");
    let cfg = GenConfig {
        phase: Phase::P3,
        duration_s: 20.0,
        rate: 3_000.0,
        seed: 42,
        ..GenConfig::default()
    };
    generate_file(&cfg, &rec).expect("generate");
    let truth = brute_force(&rec);
    assert!(truth.kv_reads.len() > 10_000 && truth.page_cache > 0 && !truth.pread.is_empty());
    assert!(truth.slow_reads > 0);

    let window = format!("{T0},{T1}");
    let app = LoomApp::builder()
        .event_times()
        .args([
            "--query",
            "rocksdb-p1,rocksdb-p2,rocksdb-p3,ablation-timerange,ablation-noindex,ablation-onlytime,ablation-onlyrange",
            "--query-at-end",
            "--query-window-us",
            &window,
            "--stop-after-connections",
            "3",
            "--machine-output",
            "--report-interval-s",
            "1",
        ])
        .deep_queue()
        .store(&dir.path().join("store"))
        .start();
    let addr = app.tcp();

    let replay_cfg = ReplayConfig {
        file_path: rec.clone(),
        addr: addr.clone(),
        duration_s: None,
        speed: 10.0,
        no_wait: false,
        connect_timeout_s: 60.0,
        loops: None,
    };
    let replay = std::thread::spawn(move || {
        let stream = connect_with_retry(&replay_cfg.addr, 60.0, |_| {}).expect("connect");
        run(&replay_cfg, stream, |_| {}, || false).expect("replay")
    });
    // Two bad connections while the replay runs: plain garbage, and a frame
    // header announcing an oversized payload.
    garbage_connection(&addr, &[0xAB; 4096]);
    let mut oversized = b"LMTF".to_vec();
    oversized.extend_from_slice(&1u16.to_le_bytes());
    oversized.extend_from_slice(&0u16.to_le_bytes());
    oversized.extend_from_slice(&1u32.to_le_bytes());
    oversized.extend_from_slice(&u32::MAX.to_le_bytes());
    oversized.extend_from_slice(&[0u8; 12]);
    garbage_connection(&addr, &oversized);

    let summary = replay.join().expect("replay thread");
    assert_eq!(summary.records, truth.total);
    let end = app.wait();
    let (all, stderr) = (end.all(), &end.stderr);
    assert!(end.success(), "loom-app failed: {all}\n{stderr}");

    let answer = |q: &str| end.answer(q);
    let stats = end.stats();
    // Every record of the good connection arrived and was stored.
    assert_eq!(stats["received"], truth.total.to_string(), "{all}");
    assert_eq!(stats["dropped"], "0", "{all}");
    assert_eq!(stats["ingested"], truth.total.to_string(), "{all}");
    assert_eq!(stats["bad_connections"], "2", "{all}");
    assert!(stderr.contains("bad frame magic"), "{stderr}");
    assert!(stderr.contains("exceeds the limit"), "{stderr}");

    for (q, v) in [
        ("rocksdb-p1", &truth.kv_reads),
        ("rocksdb-p2", &truth.pread),
    ] {
        let a = answer(q);
        assert_eq!(a["t0"], T0.to_string());
        assert_eq!(a["t1"], T1.to_string());
        let (count, max, p) = latency_fields(v);
        assert_eq!(a["count"], count, "{q}");
        assert_eq!(a["max"], max, "{q}");
        assert_eq!(a["p9999"], p, "{q}");
    }
    assert_eq!(answer("rocksdb-p3")["count"], truth.page_cache.to_string());
    for q in [
        "ablation-timerange",
        "ablation-noindex",
        "ablation-onlytime",
        "ablation-onlyrange",
    ] {
        assert_eq!(answer(q)["count"], truth.slow_reads.to_string(), "{q}");
    }
    // Each ablation mode reached the records its own way: no index walks
    // back from the newest chunk, time-only reads the window's chunks, and
    // time+range only those whose bins hold a slow read.
    let chunks = |q: &str| -> u64 { answer(q)["chunks_read"].parse().expect("chunks_read") };
    let (none, time, both) = (
        chunks("ablation-noindex"),
        chunks("ablation-onlytime"),
        chunks("ablation-timerange"),
    );
    assert!(
        none >= time && time >= both && time > 0,
        "{none} {time} {both}"
    );
    assert!(all.contains("Query Latency (rocksdb-p1): "));
}

/// Runs loom-app on `rec` (event times as recorded, the P1/P2 questions at
/// the end over [T0, T1]) with `extra` flags; returns its stdout lines.
fn answers_for(rec: &std::path::Path, store: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let window = format!("{T0},{T1}");
    let app = LoomApp::builder()
        .event_times()
        .args([
            "--query",
            "rocksdb-p1,rocksdb-p2",
            "--query-at-end",
            "--query-window-us",
            &window,
            "--stop-after-connections",
            "1",
            "--machine-output",
        ])
        .deep_queue()
        .args(extra.iter().copied())
        .store(store)
        .start();
    let addr = app.tcp();
    let cfg = ReplayConfig {
        file_path: rec.to_path_buf(),
        addr,
        duration_s: None,
        speed: 20.0,
        no_wait: false,
        connect_timeout_s: 60.0,
        loops: None,
    };
    let stream = connect_with_retry(&cfg.addr, 60.0, |_| {}).expect("connect");
    run(&cfg, stream, |_| {}, || false).expect("replay");
    let end = app.wait();
    assert!(end.success(), "{}\n{}", end.all(), end.stderr);
    end.lines
}

#[test]
fn interleaved_batches_keep_exact_event_times_with_the_reorder_stage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("p2");
    let cfg = GenConfig {
        phase: Phase::P2,
        duration_s: 20.0,
        rate: 3_000.0,
        seed: 9,
        ..GenConfig::default()
    };
    generate_file(&cfg, &rec).expect("generate");
    // Send every pair of batches in swapped order, as two worker threads
    // whose batches overtake each other would.
    let shuffled = dir.path().join("p2-interleaved");
    let mut reader = RecordingReader::open(&rec).expect("open");
    let header = reader.header().clone();
    let mut batches = Vec::new();
    let mut b = telemetry::Batch::default();
    while reader.read_into(&mut b).expect("read") {
        batches.push(std::mem::take(&mut b));
    }
    for pair in batches.chunks_mut(2) {
        pair.reverse();
    }
    let mut w = telemetry::RecordingWriter::create(&shuffled, &header).expect("create");
    for b in &batches {
        w.write_batch(b).expect("write");
    }
    w.finish().expect("finish");
    let truth = brute_force(&rec);

    // (late refused, late stored) from the Final: line, and the answers.
    type Answers = HashMap<String, HashMap<String, String>>;
    let stats_of = |lines: &[String]| -> ((String, String), Answers) {
        let fin = lines
            .iter()
            .find(|l| l.starts_with("Final: "))
            .cloned()
            .unwrap_or_default();
        let after = |label: &str| {
            fin.split(label)
                .nth(1)
                .and_then(|s| s.split(',').next())
                .unwrap_or("?")
                .to_string()
        };
        let late = (
            after("late refused "),
            after("late stored at their own time "),
        );
        let answers = lines
            .iter()
            .filter(|l| l.starts_with("ANSWER "))
            .map(|l| {
                let f = fields(l);
                (f["query"].clone(), f)
            })
            .collect();
        (late, answers)
    };
    let check = |answers: &HashMap<String, HashMap<String, String>>, truth: &Truth| {
        for (q, v) in [
            ("rocksdb-p1", &truth.kv_reads),
            ("rocksdb-p2", &truth.pread),
        ] {
            let a = &answers[q];
            let (count, max, p) = latency_fields(v);
            assert_eq!(a["count"], count, "{q}");
            assert_eq!(a["max"], max, "{q}");
            assert_eq!(a["p9999"], p, "{q}");
        }
    };
    // Without the stage the disorder shows: records later than their
    // source's newest are stored late, exactly those, each at its own
    // time, so every record answers the windowed questions exactly.
    let off = answers_for(
        &shuffled,
        &dir.path().join("s0"),
        &["--reorder-window-ms", "0"],
    );
    let sent = brute_force(&shuffled);
    assert!(
        sent.late > 0,
        "the interleaved recording is not out of order"
    );
    let (late_off, answers) = stats_of(&off);
    assert_eq!(
        late_off,
        ("0".to_string(), sent.late.to_string()),
        "{off:?}"
    );
    check(&answers, &truth);
    // With it every record keeps its time in its series, none is late,
    // and the answers are exact.
    let on = answers_for(
        &shuffled,
        &dir.path().join("s1"),
        &["--reorder-window-ms", "2000"],
    );
    let (late_on, answers) = stats_of(&on);
    assert_eq!(late_on, ("0".to_string(), "0".to_string()), "{on:?}");
    check(&answers, &truth);

    // Records far later than the window, made on purpose: a batch from
    // inside the query window sent again after everything else. Each is
    // stored late at its own time: the windowed answers are brute force
    // over everything sent (the batch counts twice), none is refused, and
    // ingested counts each record sent once (stored at another time
    // besides, the answers would differ).
    let stale = batches
        .iter()
        .find(|b| {
            b.records
                .first()
                .is_some_and(|r| r.timestamp_us() > 6_000_000)
        })
        .expect("a batch at 6 s")
        .clone();
    let newest = |id: u64| {
        batches
            .iter()
            .flat_map(|b| &b.records)
            .filter(|r| r.source_id() == id)
            .map(|r| r.timestamp_us())
            .max()
            .unwrap_or(0)
    };
    assert!(
        stale
            .records
            .iter()
            .all(|r| newest(r.source_id()) > r.timestamp_us() + 3_000_000),
        "every stale record's source goes on for seconds"
    );
    let with_stale = dir.path().join("p2-stale");
    let mut w = telemetry::RecordingWriter::create(&with_stale, &header).expect("create");
    for b in batches.iter().chain([&stale]) {
        w.write_batch(b).expect("write");
    }
    w.finish().expect("finish");
    let late = answers_for(
        &with_stale,
        &dir.path().join("s2"),
        &["--reorder-window-ms", "500"],
    );
    let (late_count, answers) = stats_of(&late);
    assert_eq!(
        late_count,
        ("0".to_string(), stale.records.len().to_string()),
        "{late:?}"
    );
    let with = brute_force(&with_stale);
    assert!(
        with.kv_reads.len() + with.pread.len() > truth.kv_reads.len() + truth.pread.len(),
        "the stale batch is in the window"
    );
    check(&answers, &with);
    let stats = late
        .iter()
        .find(|l| l.starts_with("STATS "))
        .map(|l| fields(l))
        .unwrap_or_default();
    assert_eq!(stats["ingested"], with.total.to_string(), "{late:?}");
    assert_eq!(stats["late_stored"], stale.records.len().to_string());
    assert_eq!(stats["late"], "0");
}
