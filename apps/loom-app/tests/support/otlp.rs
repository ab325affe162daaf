//! Shared by the OTLP tests (included with `#[path]`): a loom-app child
//! process with its OTLP and InfluxQL endpoints on free ports, and InfluxQL
//! queries over plain HTTP.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use serde_json::Value;
use testing::LoomApp;

/// A running loom-app (the shared harness's) and its OTLP and InfluxQL
/// addresses.
pub struct App {
    pub app: LoomApp,
    /// `host:port` of OTLP/gRPC.
    pub grpc: String,
    /// `host:port` of OTLP/HTTP.
    pub http: String,
    /// `host:port` of the InfluxDB API.
    pub influx: String,
}

impl App {
    /// Starts loom-app on `store` with every endpoint on a free loopback
    /// port, plus `extra` flags (persisting every 200 ms unless they say
    /// otherwise); waits until it listens.
    pub fn start(store: &Path, extra: &[&str]) -> App {
        let mut args = vec!["--query", "probe-effect", "--report-interval-s", "1"];
        if !extra.contains(&"--persist-interval-ms") {
            args.extend(["--persist-interval-ms", "200"]);
        }
        args.extend_from_slice(extra);
        let app = LoomApp::builder().args(args).store(store).start();
        App {
            grpc: app.otlp_grpc(),
            http: app.otlp_http(),
            influx: app.http(),
            app,
        }
    }

    /// Kills loom-app at once (SIGKILL: no chance to persist anything).
    pub fn kill(&mut self) {
        self.app.process.kill();
    }

    /// Whether loom-app is still running.
    pub fn running(&mut self) -> bool {
        !self.app.process.exited()
    }

    /// Asks loom-app to stop (SIGINT) and returns its `Final` lines.
    pub fn stop(self) -> Vec<String> {
        let end = self.app.stop();
        end.lines
            .into_iter()
            .filter(|l| l.starts_with("Final"))
            .collect()
    }
}

/// The venv with the pinned OpenTelemetry SDK (`tests/otlp/requirements.txt`).
pub fn venv_python() -> PathBuf {
    testing::venv::python(
        "otlp-venv",
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/requirements.txt"),
    )
}

/// `application/x-www-form-urlencoded` text of `s`.
pub fn form(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// One HTTP/1.1 request; returns (status, lowercase head, body).
pub fn http(addr: &str, request: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    s.write_all(request).expect("send");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(buf.len());
    let head = String::from_utf8_lossy(&buf[..split]).to_lowercase();
    let body = buf.get(split + 4..).unwrap_or_default().to_vec();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head, body)
}

/// A POST with `headers` (each `Name: value\r\n`) and `body`.
pub fn post(addr: &str, path: &str, headers: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n{headers}\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    http(addr, &req)
}

/// InfluxQL `q` through `/query` (µs epochs); the whole JSON answer.
pub fn query(influx: &str, q: &str) -> Value {
    let req = format!(
        "GET /query?epoch=u&q={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        form(q)
    );
    let (status, _, body) = http(influx, req.as_bytes());
    let v: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)));
    assert_eq!(status, 200, "{q}: {v}");
    v
}

/// Every series of the first statement's answer (none: empty).
pub fn series(v: &Value) -> Vec<Value> {
    if let Some(e) = v["results"][0].get("error") {
        panic!("query error: {e}");
    }
    v["results"][0]["series"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Rows of the first series as maps from column to value.
pub fn rows(v: &Value) -> Vec<serde_json::Map<String, Value>> {
    series(v)
        .first()
        .map(|s| {
            let cols: Vec<String> = s["columns"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect();
            s["values"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    cols.iter()
                        .cloned()
                        .zip(r.as_array().cloned().unwrap_or_default())
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The first value of the first row (e.g. a count); 0 when there is none.
pub fn scalar(v: &Value) -> u64 {
    series(v)
        .first()
        .and_then(|s| s["values"][0][1].as_u64())
        .unwrap_or(0)
}

/// Polls `q`'s scalar until it is `want` (120 s at most; a measurement
/// that does not exist yet counts as 0).
pub fn wait_count(influx: &str, q: &str, want: u64) {
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let v = query(influx, q);
        let n = if v["results"][0].get("error").is_some() {
            0
        } else {
            scalar(&v)
        };
        if n == want {
            return;
        }
        assert!(Instant::now() < end, "{q}: {n} of {want}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Peak resident memory of process `pid`, bytes (`VmHWM`).
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kb << 10
}

/// A resource naming `service` (`service.name`).
pub fn resource(service: &str) -> Option<Resource> {
    Some(Resource {
        attributes: vec![KeyValue {
            key: "service.name".into(),
            value: Some(AnyValue {
                value: Some(Any::StringValue(service.into())),
            }),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// One request of `spans` (name, start µs, duration µs) of `service`.
pub fn traces(service: &str, spans: &[(&str, u64, u64)]) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: resource(service),
            scope_spans: vec![ScopeSpans {
                spans: spans
                    .iter()
                    .map(|&(name, start_us, dur_us)| Span {
                        trace_id: vec![7; 16],
                        span_id: start_us.to_le_bytes().to_vec(),
                        name: name.into(),
                        kind: 2,
                        start_time_unix_nano: start_us * 1000,
                        end_time_unix_nano: (start_us + dur_us) * 1000,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// A single-threaded runtime for a test's gRPC client calls.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// `q`'s scalar answer.
pub fn count(influx: &str, q: &str) -> u64 {
    scalar(&query(influx, q))
}

/// Waits until `q` counts `want`, then checks it stays there a moment.
pub fn settles_at(influx: &str, q: &str, want: u64) {
    wait_count(influx, q, want);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(count(influx, q), want, "{q}");
}
