//! Real InfluxDB 1.x clients no one here wrote — Debian's `influx` CLI and
//! the PyPI `influxdb` package — ask loom-app's HTTP API the paper's
//! questions while it holds a replayed recording; every answer equals brute
//! force over the recording. Also `loom query --store` on the store while
//! loom-app still writes it, and after loom-app is SIGKILLed.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use replay::{connect_with_retry, run_paced as run, ReplayConfig};
use replay::{generate_file, GenConfig, Phase};
use serde_json::{json, Value};
use telemetry::{KvOpKind, Record, RecordingReader};
use testing::LoomApp;

const T0: u64 = 2_000_000;
const T1: u64 = 9_000_000;

#[derive(Default)]
struct Truth {
    total: u64,
    /// (time µs, duration µs) of KV reads in [T0, T1].
    reads: Vec<(u64, u64)>,
    /// (time µs, duration µs) of pread64 in [T0, T1].
    pread: Vec<(u64, u64)>,
    page_cache: u64,
}

fn truth(path: &Path) -> Truth {
    let mut t = Truth::default();
    for b in RecordingReader::open(path).expect("open recording") {
        let b = b.expect("read batch");
        t.total += b.records.len() as u64;
        for r in &b.records {
            let ts = r.timestamp_us();
            if !(T0..=T1).contains(&ts) {
                continue;
            }
            match r {
                Record::KvOp(k) if k.op == KvOpKind::Read => t.reads.push((ts, k.duration_us)),
                Record::Syscall(s) if s.nr == 17 => t.pread.push((ts, s.duration_us)),
                Record::PageCache(_) => t.page_cache += 1,
                _ => {}
            }
        }
    }
    t.reads.sort_unstable();
    t.pread.sort_unstable();
    t
}

/// InfluxDB 1.x's answer to `max(x), percentile(x, 99.99)`: `[T0, max, p]`.
fn max_p9999(v: &[(u64, u64)]) -> Value {
    let mut d: Vec<u64> = v.iter().map(|x| x.1).collect();
    d.sort_unstable();
    let n = d.len();
    let k = ((n as f64) * 99.99 / 100.0 + 0.5).floor() as usize;
    json!([T0, d[n - 1], d[k - 1]])
}

/// The statements and, for each, its columns and expected rows.
fn questions(t: &Truth) -> Vec<(String, Vec<&'static str>, Vec<Value>)> {
    let w = format!("time >= {} AND time <= {}", T0 * 1000, T1 * 1000);
    let mut buckets: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    for &(ts, d) in &t.reads {
        let e = buckets.entry(ts - ts % 1_000_000).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(d);
    }
    let mut durations: Vec<u64> = t.reads.iter().map(|r| r.1).collect();
    durations.sort_unstable();
    let cut = durations[durations.len() - 20];
    let mut top: Vec<(u64, u64)> = t.reads.clone();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(100);
    top.sort_by_key(|r| r.0);
    vec![
        (
            format!("SELECT max(duration_us), percentile(duration_us, 99.99) FROM kv WHERE op = 'read' AND {w}"),
            vec!["time", "max", "percentile"],
            vec![max_p9999(&t.reads)],
        ),
        (
            format!("SELECT max(duration_us), percentile(duration_us, 99.99) FROM syscall WHERE name = 'pread64' AND {w}"),
            vec!["time", "max", "percentile"],
            vec![max_p9999(&t.pread)],
        ),
        (
            format!("SELECT count(pfn) FROM pagecache WHERE {w}"),
            vec!["time", "count"],
            vec![json!([T0, t.page_cache])],
        ),
        (
            format!("SELECT count(duration_us) FROM kv WHERE op = 'read' AND duration_us > 80 AND {w}"),
            vec!["time", "count"],
            vec![json!([T0, t.reads.iter().filter(|r| r.1 > 80).count()])],
        ),
        (
            format!("SELECT count(duration_us), max(duration_us) FROM kv WHERE op = 'read' AND {w} GROUP BY time(1s) fill(none)"),
            vec!["time", "count", "max"],
            buckets.iter().map(|(b, (n, m))| json!([b, n, m])).collect(),
        ),
        (
            format!("SELECT duration_us FROM kv WHERE op = 'read' AND duration_us >= {cut} AND {w}"),
            vec!["time", "duration_us"],
            t.reads.iter().filter(|r| r.1 >= cut).map(|r| json!([r.0, r.1])).collect(),
        ),
        (
            format!("SELECT top(duration_us, 100) FROM kv WHERE op = 'read' AND {w}"),
            vec!["time", "top"],
            top.iter().map(|r| json!([r.0, r.1])).collect(),
        ),
    ]
}

fn start_app(store: &Path) -> (LoomApp, String, String) {
    let app = LoomApp::builder()
        .event_times()
        .args(["--query", "probe-effect", "--persist-interval-ms", "200"])
        .deep_queue()
        .store(store)
        .start();
    let (tcp, http) = (app.tcp(), app.http());
    (app, tcp, http)
}

fn replay_into(rec: &Path, addr: &str) {
    let cfg = ReplayConfig {
        file_path: rec.to_path_buf(),
        addr: addr.to_string(),
        duration_s: None,
        speed: 1.0,
        no_wait: true,
        connect_timeout_s: 60.0,
        loops: None,
    };
    let stream = connect_with_retry(&cfg.addr, 60.0, |_| {}).expect("connect");
    run(&cfg, stream, |_| {}, || false).expect("replay");
}

/// Rows of the first series of `stmt`'s result, InfluxDB JSON.
fn rows(v: &Value) -> Vec<Value> {
    v["series"][0]["values"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn http_get(http: &str, q: &str) -> Value {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(http).expect("connect to the HTTP API");
    let req = format!(
        "GET /query?epoch=u&q={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        form(q)
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut buf = String::new();
    s.read_to_string(&mut buf).expect("read");
    let body = buf.split_once("\r\n\r\n").map_or("", |x| x.1);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {buf}"))
}

fn form(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn wait_ingested(http: &str, total: u64) {
    let end = Instant::now() + Duration::from_secs(120);
    let q = "SELECT count(duration_us) FROM kv; SELECT count(duration_us) FROM syscall; SELECT count(pfn) FROM pagecache";
    loop {
        let v = http_get(http, q);
        let n: u64 = (0..3)
            .filter_map(|i| v["results"][i]["series"][0]["values"][0][1].as_u64())
            .sum();
        if n == total {
            return;
        }
        assert!(Instant::now() < end, "ingested {n} of {total}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn venv_python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = root.join("target/influxql-venv");
    let py = venv.join("bin/python");
    let req = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/requirements.txt");
    let ok = Command::new(&py)
        .args(["-c", "import influxdb"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let s = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 -m venv (install python3-venv)");
        assert!(s.success(), "creating {}", venv.display());
        let s = Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "-r"])
            .arg(&req)
            .status()
            .expect("pip");
        assert!(s.success(), "pip install -r {}", req.display());
    }
    py
}

#[test]
fn influx_cli_and_python_client_match_brute_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("p3.rec");
    let cfg = GenConfig {
        phase: Phase::P3,
        duration_s: 10.0,
        rate: 4_000.0,
        seed: 7,
        ..GenConfig::default()
    };
    generate_file(&cfg, &rec).expect("generate");
    let t = truth(&rec);
    assert!(t.reads.len() > 10_000 && !t.pread.is_empty() && t.page_cache > 0);
    let store = dir.path().join("store");
    let (app, tcp, http) = start_app(&store);
    replay_into(&rec, &tcp);
    wait_ingested(&http, t.total);
    let port = http.rsplit(':').next().expect("port").to_string();
    let qs = questions(&t);

    // Debian's influx CLI (1.x).
    for (q, _, want) in &qs {
        let o = Command::new("influx")
            .args(["-host", "127.0.0.1", "-port", &port, "-database", "loom", "-precision", "u", "-format", "json", "-execute", q])
            .output()
            .expect("run `influx` (Debian package influxdb-client; scripts/install-deps.sh installs it)");
        assert!(
            o.status.success(),
            "influx: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
        assert_eq!(&rows(&v["results"][0]), want, "influx CLI: {q}");
    }

    // The PyPI `influxdb` client.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_client.py");
    let o = Command::new(venv_python())
        .arg(&script)
        .args(["--port", &port])
        .args(qs.iter().map(|q| q.0.as_str()))
        .output()
        .expect("python client");
    assert!(
        o.status.success(),
        "python: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let mut lines = out.lines();
    let ping: Value = serde_json::from_str(lines.next().expect("ping line")).expect("json");
    assert!(
        ping["ping"].as_str().is_some_and(|v| v.starts_with("1.")),
        "{ping}"
    );
    for ((q, cols, want), line) in qs.iter().zip(lines) {
        let v: Value = serde_json::from_str(line).expect("json line");
        let got: Vec<Value> = v["points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| Value::Array(cols.iter().map(|c| p[*c].clone()).collect()))
            .collect();
        assert_eq!(&got, want, "python influxdb: {q}");
    }

    // `loom query --store` while loom-app still holds the store: it reads
    // what is durable (persisted every 200 ms; the replay is done).
    std::thread::sleep(Duration::from_millis(600));
    let loom = |q: &str| -> Value {
        let o = Command::new(testing::binary("loom"))
            .args(["query", "--format", "json", "--store"])
            .arg(&store)
            .arg(q)
            .output()
            .expect("loom query");
        assert!(
            o.status.success(),
            "loom query: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).expect("json")
    };
    let ns_rows = |v: &Value| -> Vec<Value> {
        rows(&v["results"][0])
            .into_iter()
            .map(|r| {
                let mut r = r.as_array().cloned().unwrap_or_default();
                if let Some(t) = r.first().and_then(Value::as_u64) {
                    r[0] = json!(t / 1000);
                }
                Value::Array(r)
            })
            .collect()
    };
    for (q, _, want) in &qs {
        assert_eq!(
            &ns_rows(&loom(q)),
            want,
            "loom query --store (writer alive): {q}"
        );
    }
    // After SIGKILL: the store still answers read-only from what was durable.
    drop(app);
    for (q, _, want) in &qs {
        assert_eq!(
            &ns_rows(&loom(q)),
            want,
            "loom query --store (after SIGKILL): {q}"
        );
    }
}
