//! The OpenTelemetry Python SDK with its OTLP exporters (PyPI, pinned in
//! `tests/otlp/requirements.txt`; no one here wrote them) exports a known
//! set of spans, log records and metrics to loom-app over gRPC (gzip),
//! HTTP/protobuf (deflate) and HTTP/JSON, one service per transport; the
//! InfluxQL answers (aggregates, percentiles, GROUP BY, raw selects with
//! string fields) equal brute force over what was sent. Nothing is refused,
//! throttled or late.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

#[path = "support/otlp.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::{query, rows, series, venv_python, wait_count, App};

const TRANSPORTS: [&str; 3] = ["grpc", "http", "json"];
const SPANS: usize = 2500;
const LOGS: usize = 300;
const NAMES: [&str; 3] = ["GET /a", "POST /b", "db.query"];
const SEVERITIES: [(u64, &str); 4] = [(9, "INFO"), (13, "WARN"), (17, "ERROR"), (5, "DEBUG")];

/// A deterministic pseudo-random sequence (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// What one transport sends: its service, spans and log records.
fn spec(t: usize, base_ns: u64) -> Value {
    let mut rng = Lcg(t as u64 + 11);
    let span_base = base_ns + t as u64 * 20_000_000_000;
    let spans: Vec<Value> = (0..SPANS)
        .map(|i| {
            let r = rng.next();
            let dur_us = if r.is_multiple_of(100) {
                50_000 + r % 150_000
            } else {
                100 + r % 5_000
            };
            let start = span_base + i as u64 * 1_000_000;
            let end = start + dur_us * 1000 + r % 1000;
            let mut attrs = json!({
                "http.status_code": 200 + (i % 3) * 100,
                "user": format!("u{}", i % 10),
                "ratio": (i % 8) as f64 * 0.125,
                "cached": i % 2 == 0,
            });
            if i % 50 == 0 {
                attrs["note"] = json!("quote \" backslash \\ é");
            }
            let events = if i % 10 == 0 {
                json!([{"name": "retry", "time_ns": start + 1_000, "attributes": {"attempt": 1}}])
            } else {
                json!([])
            };
            json!({
                "name": NAMES[i % 3],
                "start_ns": start,
                "end_ns": end,
                "kind": 1 + i % 5,
                "status": match i % 7 { 0 => 2, 1 => 1, _ => 0 },
                "status_message": if i % 7 == 0 { format!("err {i}") } else { String::new() },
                "attributes": attrs,
                "events": events,
                "parent": if i % 3 == 0 { Value::Null } else { json!(i - i % 3) },
            })
        })
        .collect();
    let log_base = base_ns + 60_000_000_000 + t as u64 * 20_000_000_000;
    let logs: Vec<Value> = (0..LOGS)
        .map(|j| {
            let (number, text) = SEVERITIES[j % 4];
            let time = log_base + j as u64 * 2_000_000;
            let body = if j % 5 == 0 {
                json!({"msg": format!("m{j}"), "n": j})
            } else {
                json!(format!("log line {j} \"q\" é"))
            };
            let (trace, span) = if j % 3 == 0 {
                (format!("{:032x}", j + 1), format!("{:016x}", j + 7))
            } else {
                (String::new(), String::new())
            };
            json!({
                "time_ns": time,
                "observed_ns": time + 500,
                "severity_number": number,
                "severity_text": text,
                "body": body,
                "attributes": {"j": j, "path": format!("/p{}", j % 4)},
                "trace_id": trace,
                "span_id": span,
            })
        })
        .collect();
    json!({
        "service": format!("svc-{}", TRANSPORTS[t]),
        "seed": t,
        "spans": spans,
        "logs": logs,
        "metrics": {
            "requests": [["/a", "200", 5], ["/a", "500", 2], ["/b", "200", 7], ["/a", "200", 3]],
            "latency": [["/a", 1.5], ["/a", 12.0], ["/b", 300.0], ["/a", 7.25]],
            "temperature": [["lab", 21.5], ["hall", 18.0]],
        },
    })
}

/// InfluxDB 1.x `percentile`: nearest rank `floor(n·p/100 + 0.5)`.
fn percentile(sorted: &[u64], p: f64) -> Value {
    let k = ((sorted.len() as f64) * p / 100.0 + 0.5).floor() as usize;
    if k == 0 {
        Value::Null
    } else {
        json!(sorted[k - 1])
    }
}

fn parse(v: &Value) -> Value {
    serde_json::from_str(v.as_str().unwrap_or_else(|| panic!("not a string: {v}")))
        .unwrap_or_else(|e| panic!("{e}: {v}"))
}

/// Span questions for one transport against brute force over its spec
/// and the ids the SDK reported.
fn check_spans(influx: &str, spec: &Value, sent: &Value) {
    let service = spec["service"].as_str().unwrap_or_default();
    let spans = spec["spans"].as_array().cloned().unwrap_or_default();
    let ids = sent["spans"].as_array().cloned().unwrap_or_default();
    assert_eq!(ids.len(), spans.len());
    let start_us = |s: &Value| s["start_ns"].as_u64().unwrap_or(0) / 1000;
    let dur_us = |s: &Value| {
        (s["end_ns"].as_u64().unwrap_or(0) - s["start_ns"].as_u64().unwrap_or(0)) / 1000
    };

    // Aggregates and percentiles over a window.
    let t0 = start_us(&spans[400]);
    let t1 = start_us(&spans[2100]);
    let mut d: Vec<u64> = spans
        .iter()
        .filter(|s| (t0..=t1).contains(&start_us(s)))
        .map(dur_us)
        .collect();
    d.sort_unstable();
    let q = format!(
        "SELECT count(duration_us), max(duration_us), percentile(duration_us, 99.99), percentile(duration_us, 90) \
         FROM span WHERE service = '{service}' AND time >= {} AND time <= {}",
        t0 * 1000,
        t1 * 1000
    );
    let got = query(influx, &q);
    assert_eq!(
        series(&got)[0]["values"][0],
        json!([
            t0,
            d.len(),
            d[d.len() - 1],
            percentile(&d, 99.99),
            percentile(&d, 90.0)
        ]),
        "{q}"
    );

    // Per span name, and the p99.99 of one name over all time.
    let q =
        format!("SELECT count(duration_us) FROM span WHERE service = '{service}' GROUP BY name");
    let got: BTreeMap<String, u64> = series(&query(influx, &q))
        .iter()
        .map(|s| {
            (
                s["tags"]["name"].as_str().unwrap_or_default().to_string(),
                s["values"][0][1].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for s in &spans {
        *want
            .entry(s["name"].as_str().unwrap_or_default().into())
            .or_default() += 1;
    }
    assert_eq!(got, want, "{q}");
    let mut d: Vec<u64> = spans
        .iter()
        .filter(|s| s["name"] == "db.query")
        .map(dur_us)
        .collect();
    d.sort_unstable();
    let q = format!("SELECT percentile(duration_us, 99.99) FROM span WHERE service = '{service}' AND name = 'db.query'");
    assert_eq!(
        series(&query(influx, &q))[0]["values"][0][1],
        percentile(&d, 99.99),
        "{q}"
    );

    // Errors slower than 1 ms: a status predicate and a range predicate.
    let q = format!("SELECT count(duration_us) FROM span WHERE service = '{service}' AND status = 2 AND duration_us > 1000");
    let want = spans
        .iter()
        .filter(|s| s["status"] == 2 && dur_us(s) > 1000)
        .count();
    assert_eq!(support::scalar(&query(influx, &q)), want as u64, "{q}");

    // Raw rows of one name: every field, strings included.
    let q = format!(
        "SELECT duration_us, kind, status, status_message, trace_id, span_id, parent_span_id, attributes, events, scope \
         FROM span WHERE service = '{service}' AND name = 'POST /b'"
    );
    let got = rows(&query(influx, &q));
    let want: Vec<(usize, &Value)> = spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s["name"] == "POST /b")
        .collect();
    assert_eq!(got.len(), want.len(), "{q}");
    for (row, (i, s)) in got.iter().zip(want) {
        let ctx = format!("{q}: span {i}");
        assert_eq!(row["time"], json!(start_us(s)), "{ctx}");
        assert_eq!(row["duration_us"], json!(dur_us(s)), "{ctx}");
        assert_eq!(row["kind"], s["kind"], "{ctx}");
        assert_eq!(row["status"], s["status"], "{ctx}");
        assert_eq!(row["status_message"], s["status_message"], "{ctx}");
        assert_eq!(row["trace_id"], ids[i]["trace_id"], "{ctx}");
        assert_eq!(row["span_id"], ids[i]["span_id"], "{ctx}");
        assert_eq!(row["parent_span_id"], ids[i]["parent_span_id"], "{ctx}");
        // The SDK's own parent links: a child's parent is the span it was started under.
        let parent = s["parent"]
            .as_u64()
            .map_or(Value::Null, |p| ids[p as usize]["span_id"].clone());
        assert_eq!(row["parent_span_id"], parent, "{ctx}");
        assert_eq!(parse(&row["attributes"]), s["attributes"], "{ctx}");
        let events: Vec<Value> = s["events"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| json!({"time_us": e["time_ns"].as_u64().unwrap_or(0) / 1000, "name": e["name"], "attributes": e["attributes"]}))
            .collect();
        assert_eq!(parse(&row["events"]), Value::Array(events), "{ctx}");
        assert_eq!(row["scope"], "loom.test", "{ctx}");
    }

    // One trace by its id (a string predicate): the root and its two children.
    let trace = ids[300]["trace_id"].as_str().unwrap_or_default();
    let q = format!("SELECT span_id, name FROM span WHERE trace_id = '{trace}'");
    let got: Vec<String> = series(&query(influx, &q))
        .iter()
        .flat_map(|s| s["values"].as_array().cloned().unwrap_or_default())
        .map(|r| r[1].as_str().unwrap_or_default().to_string())
        .collect();
    let mut want: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|(_, x)| x["trace_id"] == trace)
        .map(|(i, _)| ids[i]["span_id"].as_str().unwrap_or_default().to_string())
        .collect();
    let mut got = got;
    got.sort();
    want.sort();
    assert_eq!(want.len(), 3);
    assert_eq!(got, want, "{q}");
}

fn check_logs(influx: &str, spec: &Value) {
    let service = spec["service"].as_str().unwrap_or_default();
    let logs = spec["logs"].as_array().cloned().unwrap_or_default();
    let q = format!(
        "SELECT count(severity_number) FROM log WHERE service = '{service}' GROUP BY severity"
    );
    let got: BTreeMap<String, u64> = series(&query(influx, &q))
        .iter()
        .map(|s| {
            (
                s["tags"]["severity"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                s["values"][0][1].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for l in &logs {
        *want
            .entry(l["severity_text"].as_str().unwrap_or_default().into())
            .or_default() += 1;
    }
    assert_eq!(got, want, "{q}");

    let q = format!(
        "SELECT body, severity_number, attributes, trace_id, span_id, observed_us FROM log \
         WHERE service = '{service}' AND severity = 'ERROR'"
    );
    let got = rows(&query(influx, &q));
    let want: Vec<&Value> = logs
        .iter()
        .filter(|l| l["severity_text"] == "ERROR")
        .collect();
    assert_eq!(got.len(), want.len(), "{q}");
    for (row, l) in got.iter().zip(want) {
        let ctx = format!("{q}: {l}");
        assert_eq!(
            row["time"],
            json!(l["time_ns"].as_u64().unwrap_or(0) / 1000),
            "{ctx}"
        );
        assert_eq!(
            row["observed_us"],
            json!(l["observed_ns"].as_u64().unwrap_or(0) / 1000),
            "{ctx}"
        );
        assert_eq!(row["severity_number"], l["severity_number"], "{ctx}");
        // A string body is stored as text, a map body as JSON.
        match &l["body"] {
            Value::String(s) => assert_eq!(row["body"], json!(s), "{ctx}"),
            b => assert_eq!(parse(&row["body"]), *b, "{ctx}"),
        }
        assert_eq!(parse(&row["attributes"]), l["attributes"], "{ctx}");
        assert_eq!(row["trace_id"], l["trace_id"], "{ctx}");
        assert_eq!(row["span_id"], l["span_id"], "{ctx}");
    }
}

/// Every exported metric point is one row of its measurement, with its
/// attributes as tags and its values as fields.
fn check_metrics(influx: &str, spec: &Value, sent: &Value) {
    let service = spec["service"].as_str().unwrap_or_default();
    let points = sent["metrics"].as_array().cloned().unwrap_or_default();
    for name in ["requests", "latency", "temperature"] {
        assert!(
            points.iter().any(|p| p["name"] == name),
            "the SDK exported no {name}: {points:?}"
        );
    }
    for name in ["requests", "latency", "temperature"] {
        let q = format!("SELECT * FROM \"{name}\" WHERE service = '{service}'");
        let mut got: Vec<Value> = rows(&query(influx, &q))
            .into_iter()
            .map(|r| {
                let mut r = r;
                r.retain(|_, v| !v.is_null());
                Value::Object(r)
            })
            .collect();
        let mut want: Vec<Value> = points
            .iter()
            .filter(|p| p["name"] == name)
            .map(|p| {
                let mut r = serde_json::Map::new();
                r.insert(
                    "time".into(),
                    json!(p["time_unix_nano"].as_u64().unwrap_or(0) / 1000),
                );
                r.insert(
                    "start_us".into(),
                    json!(p["start_time_unix_nano"].as_u64().unwrap_or(0) / 1000),
                );
                r.insert("service".into(), json!(service));
                r.insert("unit".into(), p["unit"].clone());
                for (k, v) in p["attributes"].as_object().into_iter().flatten() {
                    r.insert(k.clone(), v.clone());
                }
                r.insert("attributes".into(), json!("{}"));
                r.insert("scope".into(), json!("loom.test.metrics"));
                if p["kind"] == "histogram" {
                    r.insert("count".into(), p["count"].clone());
                    for f in ["sum", "min", "max"] {
                        r.insert(f.into(), json!(p[f].as_f64()));
                    }
                    r.insert("temporality".into(), json!(2));
                    r.insert(
                        "buckets".into(),
                        json!(
                            json!({"bounds": p["explicit_bounds"], "counts": p["bucket_counts"]})
                                .to_string()
                        ),
                    );
                } else {
                    r.insert("value".into(), json!(p["value"].as_f64()));
                    let sum = name == "requests";
                    r.insert("temporality".into(), json!(if sum { 2 } else { 0 }));
                    r.insert("monotonic".into(), json!(u8::from(sum)));
                }
                Value::Object(r)
            })
            .collect();
        for r in got.iter_mut() {
            // The resource holds the SDK's own attributes (its version);
            // check that it names the service and leave the rest.
            let res = r
                .as_object_mut()
                .and_then(|o| o.remove("resource"))
                .unwrap_or(Value::Null);
            assert_eq!(parse(&res)["service.name"], json!(service), "{q}");
            if let Some(b) = r.get_mut("buckets") {
                // Compare bucket JSON by value, not by number formatting.
                let v = parse(b);
                *b = json!(v.to_string());
            }
        }
        for w in want.iter_mut() {
            if let Some(b) = w.get_mut("buckets") {
                let v = parse(b);
                *b = json!(v.to_string());
            }
        }
        // A key independent of the maps' key order.
        let key = |v: &Value| {
            let sorted: BTreeMap<&String, &Value> = v.as_object().into_iter().flatten().collect();
            serde_json::to_string(&sorted).unwrap_or_default()
        };
        got.sort_by_key(key);
        want.sort_by_key(key);
        assert_eq!(got, want, "{q}");
    }
}

#[test]
fn python_sdk_over_grpc_http_and_json_matches_brute_force() {
    let py = venv_python();
    let dir = tempfile::tempdir().expect("tempdir");
    let app = App::start(&dir.path().join("store"), &[]);
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // An hour ago: the spans' and logs' own times; the metric points carry
    // the SDK's collection time (now), exported last.
    let base_ns = now_ns - 3_600_000_000_000;
    let specs: BTreeMap<&str, Value> = TRANSPORTS
        .iter()
        .enumerate()
        .map(|(t, name)| (*name, spec(t, base_ns)))
        .collect();
    let spec_path = dir.path().join("spec.json");
    let sent_path = dir.path().join("sent.json");
    std::fs::write(&spec_path, serde_json::to_vec(&specs).expect("json")).expect("write spec");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/send.py");
    let o = Command::new(&py)
        .arg(&script)
        .arg("--spec")
        .arg(&spec_path)
        .args([
            "--grpc",
            &app.grpc,
            "--http",
            &format!("http://{}", app.http),
            "--out",
        ])
        .arg(&sent_path)
        .output()
        .expect("run send.py");
    assert!(
        o.status.success(),
        "send.py failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let sent: Value =
        serde_json::from_slice(&std::fs::read(&sent_path).expect("sent.json")).expect("json");

    let influx = app.influx.clone();
    for name in TRANSPORTS {
        let service = format!("svc-{name}");
        wait_count(
            &influx,
            &format!("SELECT count(duration_us) FROM span WHERE service = '{service}'"),
            SPANS as u64,
        );
        wait_count(
            &influx,
            &format!("SELECT count(severity_number) FROM log WHERE service = '{service}'"),
            LOGS as u64,
        );
        let points = sent[name]["metrics"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (metric, field) in [
            ("requests", "value"),
            ("latency", "count"),
            ("temperature", "value"),
        ] {
            let n = points.iter().filter(|p| p["name"] == metric).count() as u64;
            wait_count(
                &influx,
                &format!("SELECT count({field}) FROM {metric} WHERE service = '{service}'"),
                n,
            );
        }
    }
    for name in TRANSPORTS {
        check_spans(&influx, &specs[name], &sent[name]);
        check_logs(&influx, &specs[name]);
        check_metrics(&influx, &specs[name], &sent[name]);
    }

    let finals = app.stop();
    let all = finals.join("\n");
    let points: usize = TRANSPORTS
        .iter()
        .map(|t| sent[t]["metrics"].as_array().map_or(0, Vec::len))
        .sum();
    let items = TRANSPORTS.len() * (SPANS + LOGS) + points;
    assert!(all.contains("late refused 0"), "{all}");
    assert!(
        all.contains(&format!(
            "items accepted {items}, rejected 0 (partial success), requests throttled 0"
        )),
        "{all}"
    );
    assert!(all.contains("bad requests 0"), "{all}");
}
