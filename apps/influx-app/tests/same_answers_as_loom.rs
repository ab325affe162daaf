//! The same synthetic recording replayed into influx-app (`--complete-data`,
//! record times stored as they are) in front of a real influxd, and into
//! loom-app (event timestamps): the phase statements asked of influxd give
//! loom-app's answers and brute force's; a `GROUP BY time(1s)` count + max
//! statement on influxd equals brute force per second. A connection sending
//! garbage meanwhile is closed with a logged reason and costs nothing else.
//! Then loom-app serves the store over HTTP and dashboard-shaped statements
//! (regular expressions, OR of tags, fill, arithmetic, transformations,
//! selectors, SHOW) on the data model's measurements answer as influxd does.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use common::{client, influxd_binary, line_fields, runtime, App, Influxd};
use influx_app::client::value_u64;
use influx_app::queries::influx_percentile_index;
use replay::{connect_with_retry, run_paced as run, ReplayConfig};
use replay::{generate_file, GenConfig, Phase};
use telemetry::{KvOpKind, Record, RecordingReader};

const T0: u64 = 1_000_000;
const T1: u64 = 4_000_000;

#[derive(Default)]
struct Truth {
    total: u64,
    kv_reads: Vec<u64>,
    slowest_read: Option<(u64, u64)>,
    pread: Vec<u64>,
    page_cache: u64,
    slow_reads: u64,
    /// Second → (count, max) of every KV read, whole recording.
    per_second: BTreeMap<u64, (u64, u64)>,
}

fn brute_force(path: &Path) -> Truth {
    let mut t = Truth::default();
    for b in RecordingReader::open(path).expect("open recording") {
        let b = b.expect("read batch");
        t.total += b.records.len() as u64;
        for r in &b.records {
            let ts = r.timestamp_us();
            if let Record::KvOp(k) = r {
                if k.op == KvOpKind::Read {
                    let e = t.per_second.entry(ts / 1_000_000).or_default();
                    e.0 += 1;
                    e.1 = e.1.max(k.duration_us);
                }
            }
            if !(T0..=T1).contains(&ts) {
                continue;
            }
            match r {
                Record::KvOp(k) if k.op == KvOpKind::Read => {
                    t.kv_reads.push(k.duration_us);
                    if k.duration_us > 80 {
                        t.slow_reads += 1;
                    }
                    // The earliest of equal maxima (InfluxDB's max selector).
                    if t.slowest_read.is_none_or(|(d, _)| k.duration_us > d) {
                        t.slowest_read = Some((k.duration_us, ts));
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

fn replay_into(addr: &str, rec: &Path) -> u64 {
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
    run(&cfg, stream, |_| {}, || false).expect("replay").records
}

const QUERIES: &str = "rocksdb-p1,rocksdb-p2,rocksdb-p3,ablation-timerange";

#[test]
fn influxd_answers_equal_loom_app_and_brute_force() {
    let Some(bin) = influxd_binary() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rocksdb-p3");
    let gen = GenConfig {
        phase: Phase::P3,
        duration_s: 6.0,
        rate: 5_000.0,
        seed: 7,
        ..GenConfig::default()
    };
    generate_file(&gen, &rec).expect("generate");
    let truth = brute_force(&rec);
    let (n_kv, n_pread) = (truth.kv_reads.len(), truth.pread.len());
    assert!(n_kv > 10_000 && n_pread > 5_000 && truth.page_cache > 0 && truth.slow_reads > 0);
    // loom-app asks the same InfluxQL statements with InfluxDB's percentile
    // rank rule, so both systems must agree exactly for any count.

    let influxd = Influxd::start(&bin, &dir.path().join("influxd"));
    let window = format!("{T0},{T1}");
    let questions = format!("{QUERIES},valkey-p1,valkey-p2,valkey-p3");
    let app = App::influx_app([
        "--influx-url",
        &influxd.url,
        "--db",
        "cmp",
        "--complete-data",
        "--timestamps",
        "event",
        "--event-offset-us",
        "0",
        "--influx-connections",
        "2",
        "--batch-size",
        "2000",
        "--query",
        &questions,
        "--query-at-end",
        "--query-window-us",
        &window,
        "--stop-after-connections",
        "2",
        "--machine-output",
    ]);
    {
        let mut garbage = TcpStream::connect(app.tcp()).expect("connect");
        // The app may close before reading everything; a failed write is fine.
        let _ = garbage.write_all(&[0xAB; 4096]);
        let _ = garbage.shutdown(std::net::Shutdown::Write);
        let _ = garbage.read_to_end(&mut Vec::new());
    }
    assert_eq!(replay_into(&app.tcp(), &rec), truth.total);
    let end = app.wait();
    let (ok, influx, err) = (end.success(), end.lines, end.stderr);
    let all = influx.join("\n");
    assert!(ok, "influx-app failed:\n{all}\n{err}");
    let stats = line_fields(&influx, "STATS ");
    assert_eq!(stats["received"], truth.total.to_string(), "{all}");
    assert_eq!(stats["written"], truth.total.to_string(), "{all}");
    assert_eq!(stats["dropped"], "0", "{all}");
    assert_eq!(stats["bad_connections"], "1", "{all}");
    assert!(err.contains("bad frame"), "{err}");
    assert!(all.contains("Backlog written: "), "{all}");

    let store = dir.path().join("loom-store");
    let app = App::builder()
        .event_times()
        .args([
            "--query",
            QUERIES,
            "--query-at-end",
            "--query-window-us",
            &window,
            "--stop-after-connections",
            "1",
            "--machine-output",
        ])
        .deep_queue()
        .store(&store)
        .start();
    assert_eq!(replay_into(&app.tcp(), &rec), truth.total);
    let end = app.wait();
    let (ok, loom, err) = (end.success(), end.lines, end.stderr);
    assert!(ok, "loom-app failed:\n{}\n{err}", loom.join("\n"));

    // Phase questions: influxd == loom-app == brute force.
    let show = |v: Option<&u64>| v.map_or("none".to_string(), u64::to_string);
    let expect = |v: &Vec<u64>| {
        (
            v.len().to_string(),
            show(v.last()),
            show(influx_percentile_index(v.len(), 99.99).map(|i| &v[i])),
        )
    };
    for (q, (count, max, p)) in [
        ("rocksdb-p1", expect(&truth.kv_reads)),
        ("rocksdb-p2", expect(&truth.pread)),
    ] {
        let i = line_fields(&influx, &format!("ANSWER query={q} "));
        let l = line_fields(&loom, &format!("ANSWER query={q} "));
        for (k, want) in [("count", &count), ("max", &max), ("p9999", &p)] {
            assert_eq!(&i[k], want, "{q} {k} on influxd:\n{all}");
            assert_eq!(&l[k], want, "{q} {k} on loom-app");
        }
    }
    for (q, want) in [
        ("rocksdb-p3", truth.page_cache),
        ("ablation-timerange", truth.slow_reads),
    ] {
        let i = line_fields(&influx, &format!("ANSWER query={q} "));
        let l = line_fields(&loom, &format!("ANSWER query={q} "));
        assert_eq!(i["count"], want.to_string(), "{q} on influxd:\n{all}");
        assert_eq!(l["count"], want.to_string(), "{q} on loom-app");
    }
    // Every answer line has the shapes figures/logparse.py reads.
    for q in QUERIES.split(',') {
        let prefix = format!("Query {q} window [{T0}, {T1}] µs: ");
        assert!(influx.iter().any(|l| l.starts_with(&prefix)), "{all}");
        let lat = format!("Query Latency ({q}): ");
        assert!(
            influx
                .iter()
                .any(|l| l.starts_with(&lat) && l.ends_with(" ms")),
            "{all}"
        );
    }

    // Valkey questions against brute force (no packets or sendto in RocksDB data).
    let p = truth.kv_reads[influx_percentile_index(n_kv, 99.99).expect("p")];
    let above = truth.kv_reads.iter().filter(|&&d| d > p).count();
    let v1 = line_fields(&influx, "ANSWER query=valkey-p1 ");
    assert_eq!(
        (v1["p9999"].clone(), v1["count"].clone()),
        (p.to_string(), above.to_string())
    );
    let v2 = line_fields(&influx, "ANSWER query=valkey-p2 ");
    assert_eq!(v2["count"], above.to_string());
    assert_eq!(
        (v2["sendto_p9999"].as_str(), v2["sendto_count"].as_str()),
        ("none", "0")
    );
    let v3 = line_fields(&influx, "ANSWER query=valkey-p3 ");
    let (max, at) = truth.slowest_read.expect("a slowest read");
    assert_eq!(v3["max"], max.to_string());
    assert_eq!(v3["max_time_us"], at.to_string());
    assert_eq!(v3["packets"], "0");

    // GROUP BY time(1s) over the whole recording equals brute force.
    let last_s = *truth.per_second.keys().last().expect("seconds");
    let statement = format!(
        "SELECT count(duration_us), max(duration_us) FROM kv WHERE op = 'read' AND time >= 0 AND time < {} GROUP BY time(1s)",
        (last_s + 1) * 1_000_000_000
    );
    let tables = runtime()
        .block_on(client(&influxd, "cmp").query(&statement))
        .expect("group by query");
    let t = &tables[0];
    assert_eq!(t.rows.len() as u64, last_s + 1, "{t:?}");
    for row in 0..t.rows.len() {
        let at_ns = t.get(row, "time").and_then(value_u64).expect("time");
        let second = at_ns / 1_000_000_000;
        let got = (
            t.get(row, "count").and_then(value_u64).unwrap_or(0),
            t.get(row, "max").and_then(value_u64).unwrap_or(0),
        );
        let want = truth.per_second.get(&second).copied().unwrap_or((0, 0));
        assert_eq!(got, want, "second {second}");
    }

    // Dashboard statements on the data model's measurements: loom-app on
    // the same store, over HTTP, against influxd.
    let served = App::builder().no_otlp().store(&store).start();
    let loom_url = format!("http://{}", served.http());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while http_query(&loom_url, "SHOW DATABASES").is_null() {
        assert!(
            std::time::Instant::now() < deadline,
            "loom-app's API never answered"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let w = "time >= 0 AND time < 6s";
    let statements = [
        format!("SELECT count(duration_us) FROM kv WHERE op =~ /^(read|write)$/ AND {w} GROUP BY time(500ms), op fill(0)"),
        format!("SELECT max(duration_us) / 1000 FROM kv WHERE op = 'read' AND {w} GROUP BY time(1s) fill(none)"),
        format!("SELECT mean(duration_us) FROM syscall WHERE \"name\" =~ /^pread/ AND {w} GROUP BY time(700ms), \"name\" fill(previous)"),
        format!("SELECT count(pfn) FROM pagecache WHERE {w} GROUP BY time(1s, 250ms) fill(linear)"),
        format!("SELECT non_negative_derivative(count(pfn), 1s), difference(count(pfn)) FROM pagecache WHERE {w} GROUP BY time(1s)"),
        format!("SELECT first(duration_us), last(duration_us), spread(duration_us) FROM kv WHERE (op = 'read' OR op = 'write') AND {w} GROUP BY op"),
        format!("SELECT median(duration_us), mode(duration_us), stddev(duration_us), count(distinct(duration_us)) FROM kv WHERE {w} GROUP BY *"),
        format!("SELECT bottom(duration_us, 5) FROM kv WHERE op !~ /write/ AND {w}"),
        format!("SELECT cumulative_sum(count(duration_us)), moving_average(max(duration_us), 2) FROM syscall WHERE \"name\" = 'pread64' AND {w} GROUP BY time(1s)"),
        "SHOW TAG VALUES FROM syscall WITH KEY = \"name\" WHERE \"name\" =~ /^p/".to_string(),
        "SHOW SERIES FROM kv".to_string(),
        "SHOW TAG KEYS FROM syscall".to_string(),
    ];
    let mut failures = Vec::new();
    for q in &statements {
        let a = http_query(&influxd.url, q);
        assert!(
            !a.is_null() && a[0].get("error").is_none(),
            "influxd refused {q}: {a}"
        );
        let b = http_query(&loom_url, q);
        if !same_numbers(&a, &b) {
            failures.push(format!("{q}\n  influxd:  {a}\n  loom-app: {b}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `/query` of db `cmp` (epoch ns) through curl: the `results` array
/// (null when the server does not answer).
fn http_query(url: &str, q: &str) -> serde_json::Value {
    let o = std::process::Command::new("curl")
        .args(["-s", "-XPOST", &format!("{url}/query")])
        .args(["--data-urlencode", &format!("q={q}")])
        .args(["--data-urlencode", "db=cmp", "--data-urlencode", "epoch=ns"])
        .output()
        .expect("curl");
    serde_json::from_slice::<serde_json::Value>(&o.stdout)
        .map(|v| v["results"].clone())
        .unwrap_or(serde_json::Value::Null)
}

/// Equal, floats within 1e-9 relative (the two systems sum in different
/// orders); integers and strings exactly.
fn same_numbers(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y
                || ((x.is_f64() || y.is_f64())
                    && match (x.as_f64(), y.as_f64()) {
                        (Some(p), Some(q)) => (p - q).abs() <= 1e-9 * p.abs().max(q.abs()),
                        _ => false,
                    })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_numbers(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_numbers(v, w)))
        }
        _ => a == b,
    }
}
