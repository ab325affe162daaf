//! What loom-app acknowledged survives a crash, at its own time.
//!
//! The stock OpenTelemetry Python SDK (pinned in `tests/otlp/requirements.txt`)
//! exports spans over gRPC and over HTTP/protobuf; loom-app is SIGKILLed
//! right after `force_flush` returned success, or after a random
//! acknowledged export (seed printed; `LOOM_TEST_SEED` repeats a run).
//! The engine's own persist is pushed out of the way
//! (`--persist-interval-ms 600000`) and the reorder window holds 5 s, so
//! only the acknowledgement's durability can keep the spans. After a
//! restart on the same store every acknowledged span is there exactly
//! once, at its own start time. And a span later than the reorder window
//! is stored at its own time (in a late sibling of its series), across a
//! SIGKILL too; refused in the answer and counted as late only past the
//! bound of late siblings, never stored at another time.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

#[path = "support/otlp.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{post, query, rows, scalar, series, venv_python, wait_count, App};

const SPANS: usize = 3000;
const BATCH: usize = 200;
/// Keeps the engine from persisting during a run.
const NO_PERSIST: [&str; 2] = ["--persist-interval-ms", "600000"];

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Every span of `service` stored: index → stored times (µs).
fn stored(influx: &str, service: &str) -> BTreeMap<u64, Vec<u64>> {
    let q = format!("SELECT \"attributes\" FROM span WHERE service = '{service}'");
    let mut out: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for r in rows(&query(influx, &q)) {
        let attrs: Value = serde_json::from_str(r["attributes"].as_str().unwrap_or("{}"))
            .unwrap_or_else(|e| panic!("attributes of {r:?}: {e}"));
        let i = attrs["i"]
            .as_u64()
            .unwrap_or_else(|| panic!("no i in {r:?}"));
        out.entry(i)
            .or_default()
            .push(r["time"].as_u64().expect("time"));
    }
    out
}

/// One run: the SDK exports `SPANS` spans; loom-app is SIGKILLed after
/// export number `kill_after` succeeded (`None`: once force_flush
/// returned); then every acknowledged span must be in the reopened store,
/// once, at its own time.
fn sigkill_run(py: &Path, transport: &str, kill_after: Option<usize>, tag: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let app = App::start(&store, &NO_PERSIST);
    let service = format!("svc-durable-{transport}-{tag}");
    // Whole ms, an hour ago: start times are the spans' own.
    let base_ns = (now_ns() - 3_600_000_000_000) / 1_000_000 * 1_000_000;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/durable.py");
    let mut sdk = Command::new(py)
        .arg(&script)
        .args([
            "--transport",
            transport,
            "--grpc",
            &app.grpc,
            "--http",
            &format!("http://{}", app.http),
            "--service",
            &service,
            "--spans",
            &SPANS.to_string(),
            "--batch",
            &BATCH.to_string(),
            "--base-ns",
            &base_ns.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run durable.py");
    let (tx, lines) = mpsc::channel();
    let out = sdk.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut app = app;
    let mut acked: BTreeSet<u64> = BTreeSet::new();
    let mut exports = 0;
    let mut killed = false;
    let end = Instant::now() + Duration::from_secs(120);
    while let Ok(l) = lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
        if let Some(list) = l.strip_prefix("ACKED ") {
            acked.extend(list.split(',').map(|i| i.parse::<u64>().expect("index")));
            exports += 1;
        }
        let kill = match kill_after {
            Some(k) => exports >= k,
            None => l.starts_with("FLUSHED"),
        };
        assert!(
            killed || !l.starts_with("FAILED"),
            "an export failed before the kill"
        );
        if kill && !killed {
            // At once: SIGKILL, no chance to persist or flush anything.
            app.kill();
            killed = true;
        }
    }
    assert!(killed, "{transport}: the SDK never got that far");
    let _ = sdk.kill();
    let _ = sdk.wait();
    if kill_after.is_none() {
        assert_eq!(
            acked.len(),
            SPANS,
            "force_flush returned with spans unexported"
        );
    }
    drop(app);

    let app = App::start(&store, &NO_PERSIST);
    let count = format!("SELECT count(duration_us) FROM span WHERE service = '{service}'");
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        let got = stored(&app.influx, &service);
        if acked.iter().all(|i| got.contains_key(i)) || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let missing: Vec<&u64> = acked.iter().filter(|i| !got.contains_key(i)).collect();
    assert!(
        missing.is_empty(),
        "{transport}, killed after {kill_after:?}: {} of {} acknowledged spans lost, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    for (i, times) in &got {
        assert!(*i < SPANS as u64, "a span that was never sent: {i}");
        let own = (base_ns + i * 1_000_000) / 1000;
        assert_eq!(
            times,
            &vec![own],
            "span {i}: stored at {times:?}, its own time is {own}"
        );
    }
    let n = scalar(&query(&app.influx, &count));
    assert_eq!(n, got.len() as u64);
    println!(
        "{transport}: killed after {} of {} exports; {} spans acknowledged, {} stored after the restart",
        exports,
        SPANS.div_ceil(BATCH),
        acked.len(),
        got.len()
    );
    let finals = app.stop().join("\n");
    assert!(finals.contains("late refused 0"), "{finals}");
}

#[test]
fn acknowledged_spans_survive_sigkill() {
    let py = venv_python();
    let seed = std::env::var("LOOM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| now_ns() | 1);
    println!("seed {seed} (LOOM_TEST_SEED={seed} repeats these kill points)");
    // The kill points, from the workspace's one seeded RNG.
    let mut rng = replay::SplitMix64::new(seed);
    let exports = SPANS.div_ceil(BATCH) as u64;
    for transport in ["grpc", "http"] {
        sigkill_run(&py, transport, None, seed);
        for k in 0..2 {
            let at = 1 + rng.below(exports - 1);
            println!("{transport}: kill after acknowledged export {at}");
            sigkill_run(&py, transport, Some(at as usize), seed ^ (k + 1));
        }
    }
}

/// One span of `service` starting at `start_us`, lasting `dur_us`, as an
/// OTLP/JSON request.
fn span_request(service: &str, n: u64, start_us: u64, dur_us: u64) -> Vec<u8> {
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": [{
            "traceId": format!("{:032x}", n + 1),
            "spanId": format!("{:016x}", n + 1),
            "name": "op",
            "kind": 1,
            "startTimeUnixNano": (start_us * 1000).to_string(),
            "endTimeUnixNano": ((start_us + dur_us) * 1000).to_string(),
        }]}]
    }]})
    .to_string()
    .into_bytes()
}

/// Count, max and InfluxDB's nearest-rank median of the durations of the
/// spans `sent` (start µs, duration µs) with start in `[t0, t1]`, and
/// their start times in order: what a windowed query must answer.
fn brute_force(sent: &[(u64, u64)], t0: u64, t1: u64) -> (u64, u64, u64, Vec<u64>) {
    let mut inside: Vec<(u64, u64)> = sent
        .iter()
        .copied()
        .filter(|(t, _)| (t0..=t1).contains(t))
        .collect();
    inside.sort_unstable();
    let times = inside.iter().map(|x| x.0).collect();
    let mut d: Vec<u64> = inside.iter().map(|x| x.1).collect();
    d.sort_unstable();
    let median = influxql::influx_rank(d.len() as u64, 50.0).map_or(0, |r| d[r as usize - 1]);
    (
        d.len() as u64,
        d.last().copied().unwrap_or(0),
        median,
        times,
    )
}

/// Asks the windowed questions over `[t0, t1]` and compares them with
/// brute force over `sent`.
fn check_window(influx: &str, service: &str, sent: &[(u64, u64)], t0: u64, t1: u64) {
    let (count, max, median, times) = brute_force(sent, t0, t1);
    let cond = format!(
        "service = '{service}' AND time >= {} AND time <= {}",
        t0 * 1000,
        t1 * 1000
    );
    let v = query(
        influx,
        &format!("SELECT count(duration_us), max(duration_us), percentile(duration_us, 50) FROM span WHERE {cond}"),
    );
    let row = rows(&v).first().cloned().unwrap_or_default();
    let get = |k: &str| row.get(k).and_then(Value::as_u64).unwrap_or(0);
    assert_eq!(
        (get("count"), get("max"), get("percentile")),
        (count, max, median),
        "[{t0}, {t1}]: {v}"
    );
    let got: Vec<u64> = rows(&query(
        influx,
        &format!("SELECT duration_us FROM span WHERE {cond}"),
    ))
    .iter()
    .map(|r| r["time"].as_u64().expect("time"))
    .collect();
    assert_eq!(got, times, "[{t0}, {t1}]: a span sits at another time");
}

/// Spans older than their series' newest stored span (later than the 5 s
/// window allows, made on purpose) are stored at their own time in late
/// siblings of their series: windowed count, max, median and raw rows agree
/// with brute force over the spans sent, before and after a SIGKILL and
/// restart, and the series is listed once. Past the bound of late siblings
/// a span is refused in the partial-success answer and counted as late;
/// none sits at another time. Once with the engine persisting every 200 ms,
/// once never: then every span comes back from the intake log after the
/// kill (replayed sorted, late or not; the refused span is left out there,
/// as admission is decided again at replay).
#[test]
fn late_spans_are_stored_at_their_own_time() {
    late_spans_run(&[], true);
    late_spans_run(&NO_PERSIST, false);
}

/// One run of [`late_spans_are_stored_at_their_own_time`] with loom-app
/// `flags`; `past_bound`: also send a span no late sibling can take.
fn late_spans_run(flags: &[&str], past_bound: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let mut app = App::start(&store, flags);
    let service = "svc-late";
    let t = (now_ns() / 1000 - 3_600_000_000) / 1000 * 1000;
    let send = |app: &App, n: u64, start_us: u64, dur_us: u64| -> Value {
        let (status, _, body) = post(
            &app.http,
            "/v1/traces",
            "Content-Type: application/json\r\n",
            &span_request(service, n, start_us, dur_us),
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).expect("json answer")
    };
    let mut sent: Vec<(u64, u64)> = Vec::new();
    // t is stored once t + 10 s moves the window past it; every span
    // before t after that comes later than the window allows. They come
    // newest first from t - 1 s to t - 8 s (each older than every late
    // sibling's newest: a new sibling each, eight in all), with others in
    // between that fit an existing sibling (t - 1.5 s after t - 2 s,
    // t - 0.5 s after t - 1 s).
    let spans: Vec<(u64, u64)> = [
        (t, 40),
        (t + 10_000_000, 10),
        (t - 1_000_000, 90),
        (t - 2_000_000, 200),
        (t - 1_500_000, 70),
        (t - 500_000, 30),
        (t + 3_000_000, 20),
    ]
    .into_iter()
    .chain((3..=8).map(|k| (t - k * 1_000_000, 100 + k)))
    .collect();
    for (n, &(start, dur)) in spans.iter().enumerate() {
        assert_eq!(
            send(&app, n as u64, start, dur),
            json!({}),
            "span at {start}"
        );
        sent.push((start, dur));
    }
    // A ninth generation would be needed: refused, reported, counted.
    if past_bound {
        let refused = send(&app, 99, t - 9_000_000, 7);
        assert_eq!(
            refused["partialSuccess"]["rejectedSpans"],
            json!(1),
            "{refused}"
        );
        let why = refused["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap_or("");
        assert!(why.contains("late sibling"), "{why}");
    }

    let all = format!("SELECT count(duration_us) FROM span WHERE service = '{service}'");
    wait_count(&app.influx, &all, sent.len() as u64);
    let windows = [
        (t - 10_000_000, t + 20_000_000),
        (t - 2_000_000, t - 1),
        (t - 1_600_000, t - 400_000),
        (t - 9_500_000, t - 8_500_000),
        (t - 5_000_000, t + 5_000_000),
    ];
    for (t0, t1) in windows {
        check_window(&app.influx, service, &sent, t0, t1);
    }
    let listed = |app: &App| {
        series(&query(
            &app.influx,
            &format!("SHOW SERIES FROM span WHERE service = '{service}'"),
        ))
        .first()
        .and_then(|s| s["values"].as_array().map(Vec::len))
        .unwrap_or(0)
    };
    assert_eq!(listed(&app), 1, "one series, however many late siblings");

    // SIGKILL and reopen: every acknowledged span at its own time, and
    // the late siblings found again (a late span fits the newest-first
    // one of t - 0.5 s's generation).
    app.kill();
    drop(app);
    let app = App::start(&store, flags);
    wait_count(&app.influx, &all, sent.len() as u64);
    for (t0, t1) in windows {
        check_window(&app.influx, service, &sent, t0, t1);
    }
    assert_eq!(send(&app, 100, t - 250_000, 55), json!({}));
    sent.push((t - 250_000, 55));
    wait_count(&app.influx, &all, sent.len() as u64);
    for (t0, t1) in windows {
        check_window(&app.influx, service, &sent, t0, t1);
    }
    assert_eq!(listed(&app), 1);
    let finals = app.stop().join("\n");
    // After the restart the late span sent then is stored late; what the
    // intake log gives back is stored again only where the crash lost it
    // (the counts above), late or not, and the span past the bound is
    // refused again if its request is still in the log.
    let number = |label: &str| -> u64 {
        finals
            .split(label)
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {label:?} in {finals}"))
    };
    assert!(number("late refused ") <= 1, "{flags:?}: {finals}");
    assert!(
        number("late stored at their own time ") >= 1,
        "{flags:?}: {finals}"
    );
}
