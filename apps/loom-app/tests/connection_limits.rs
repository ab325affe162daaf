//! Bounded connections on every listener (telemetry stream, InfluxDB API,
//! OTLP/gRPC, OTLP/HTTP), through the real binary on loopback: thousands
//! of idle connections on each listener hold no more than
//! `--max-connections` open, loom-app's threads and RSS stay bounded, and
//! valid clients (a replay, OTLP exports over gRPC and HTTP, InfluxQL
//! queries) still get in while the flood fills the limit. Slow senders
//! (a header or a body trickled a byte a second) are closed after their
//! timeout.
//!
//! `LOOM_IDLE_FLOOD` sets the idle connections per listener (default
//! 1500; `make bench-connections` runs 2500 each, 10 000 in all).

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

#[path = "support/otlp.rs"]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use replay::{connect_with_retry, run_paced as run, ReplayConfig};
use replay::{generate_file, GenConfig, Phase};
use support::{post, query, scalar, App};
use telemetry::wire::FrameWriter;
use telemetry::RecordingReader;

/// `--max-connections` in these tests.
const LIMIT: usize = 32;
const JSON: &str = "Content-Type: application/json\r\n";

/// Raises this process's soft descriptor limit to `want` (or the hard one).
fn raise_nofile(want: u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write `r`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut r), 0);
        if r.rlim_cur < want {
            r.rlim_cur = want.min(r.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &r), 0);
        }
    }
}

/// (threads, RSS in MB) of process `pid`, from /proc.
fn threads_and_rss(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let field = |name: &str| -> u64 {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    (field("Threads:"), field("VmRSS:") / 1024)
}

/// Opens up to `n` idle connections to `addr` (those the backlog cannot
/// take fail and are skipped).
fn flood(addr: &str, n: usize) -> Vec<TcpStream> {
    let a: SocketAddr = addr.parse().expect("address");
    (0..n)
        .filter_map(|_| TcpStream::connect_timeout(&a, Duration::from_secs(2)).ok())
        .collect()
}

/// How many of `conns` the server still holds open (a read would wait;
/// closed ones read end of stream or an error, after any refusal bytes).
fn still_open(conns: &[TcpStream]) -> usize {
    let mut buf = [0u8; 256];
    conns
        .iter()
        .filter(|c| {
            c.set_nonblocking(true).expect("nonblocking");
            let mut c = *c;
            loop {
                match c.read(&mut buf) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                    Ok(0) | Err(_) => return false,
                    Ok(_) => continue,
                }
            }
        })
        .count()
}

fn records_in(path: &Path) -> u64 {
    RecordingReader::open(path)
        .expect("open")
        .map(|b| b.expect("batch").records.len() as u64)
        .sum()
}

fn span_request(name: &str, start_us: u64) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    value: Some(AnyValue {
                        value: Some(Any::StringValue("svc".into())),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: vec![Span {
                    trace_id: vec![7; 16],
                    span_id: vec![1; 8],
                    name: name.into(),
                    start_time_unix_nano: start_us * 1000,
                    end_time_unix_nano: (start_us + 30) * 1000,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// The number in `line` after `label ` (e.g. `ingested 42`).
fn number_after(line: &str, label: &str) -> u64 {
    let at = line
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {line}"));
    line[at + label.len()..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {line}"))
}

#[test]
fn idle_floods_hold_the_limit_and_valid_clients_still_get_in() {
    let per_listener: usize = std::env::var("LOOM_IDLE_FLOOD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    raise_nofile(4 * per_listener as u64 + 1024);
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("p2");
    let gen = GenConfig {
        phase: Phase::P2,
        duration_s: 2.0,
        rate: 20_000.0,
        seed: 25,
        ..GenConfig::default()
    };
    generate_file(&gen, &rec).expect("generate");
    let total = records_in(&rec);
    let limit = LIMIT.to_string();
    let app = App::start(
        &dir.path().join("store"),
        &["--max-connections", &limit, "--idle-timeout-ms", "60000"],
    );
    let pid = app.app.process.pid();
    let tcp = app.app.tcp();
    let (base_threads, base_rss) = threads_and_rss(pid);

    let listeners = [
        ("telemetry stream", tcp.clone()),
        ("InfluxDB API", app.influx.clone()),
        ("OTLP/gRPC", app.grpc.clone()),
        ("OTLP/HTTP", app.http.clone()),
    ];
    let idle: Vec<(&str, Vec<TcpStream>)> = listeners
        .iter()
        .map(|(name, addr)| (*name, flood(addr, per_listener)))
        .collect();
    let connected: usize = idle.iter().map(|(_, c)| c.len()).sum();
    assert!(
        connected >= 2 * per_listener,
        "only {connected} idle connections could be opened"
    );
    // Let loom-app take (and refuse) the whole backlog; the admitted ones
    // become evictable (idle over a second).
    std::thread::sleep(Duration::from_secs(3));
    for (name, conns) in &idle {
        let open = still_open(conns);
        // The InfluxDB API closes idle connections after its 10 s header
        // timeout, which may have passed while the other floods connected.
        let least = if *name == "InfluxDB API" {
            0
        } else {
            LIMIT / 2
        };
        assert!(
            (least..=LIMIT).contains(&open),
            "{name}: {open} of {} idle connections held open, limit {LIMIT}",
            conns.len()
        );
    }
    let (threads, rss) = threads_and_rss(pid);
    eprintln!(
        "flood {connected} idle connections: threads {base_threads} -> {threads}, RSS {base_rss} -> {rss} MB"
    );
    assert!(threads <= 100, "{threads} threads");
    assert!(rss <= 256, "{rss} MB RSS");

    // Valid clients while the idle flood fills every listener.
    let cfg = ReplayConfig {
        file_path: rec.clone(),
        addr: tcp.clone(),
        duration_s: None,
        speed: 1.0,
        no_wait: true,
        connect_timeout_s: 30.0,
        loops: None,
    };
    let stream = connect_with_retry(&tcp, 30.0, |_| {}).expect("connect");
    let sent = run(&cfg, stream, |_| {}, || false).expect("replay");
    assert_eq!(sent.records, total);

    let json = br#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
        "scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708",
        "name":"over-http","kind":2,"startTimeUnixNano":"1000001000000","endTimeUnixNano":"1000001007000"}]}]}]}"#;
    let (s, _, b) = post(&app.http, "/v1/traces", JSON, json);
    assert_eq!(s, 200, "{}", String::from_utf8_lossy(&b));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let grpc = format!("http://{}", app.grpc);
    rt.block_on(async {
        let mut c = TraceServiceClient::connect(grpc).await?;
        c.export(span_request("over-grpc", 1_000_002_000)).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })
    .map_err(|e| e.to_string())
    .expect("gRPC export while the flood fills the limit");

    // Both spans become queryable (each query a new connection).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut spans = 0;
    while Instant::now() < deadline {
        spans = scalar(&query(
            &app.influx,
            "SELECT count(duration_us) FROM span WHERE time > 0",
        ));
        if spans == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(spans, 2, "spans stored while the flood held every listener");

    let (threads, rss) = threads_and_rss(pid);
    eprintln!("after the valid clients: threads {threads}, RSS {rss} MB");
    assert!(threads <= 100, "{threads} threads");
    assert!(rss <= 256, "{rss} MB RSS");

    drop(idle);
    let finals = app.stop();
    let line = finals
        .iter()
        .find(|l| l.starts_with("Final: "))
        .unwrap_or_else(|| panic!("no Final line in {finals:?}"));
    assert!(number_after(line, "ingested") >= total, "{line}");
    assert!(
        number_after(line, "refused over --max-connections") > 0,
        "{line}"
    );
    assert!(number_after(line, "closed idle or too slow") > 0, "{line}");
}

/// Writes `bytes` one a second to `addr` until loom-app closes the
/// connection; how long that took (`None`: still open after `give_up`).
fn trickle(addr: &str, bytes: &[u8], give_up: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let mut buf = [0u8; 1024];
    let mut next = bytes.iter().cycle();
    while start.elapsed() < give_up {
        if let Some(b) = next.next() {
            if s.write_all(&[*b]).is_err() {
                return Some(start.elapsed());
            }
        }
        match s.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(start.elapsed()),
            // An error answer (408) before the close.
            Ok(_) => {}
        }
    }
    None
}

#[test]
fn slow_senders_are_closed_after_the_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("p2");
    let gen = GenConfig {
        phase: Phase::P2,
        duration_s: 0.2,
        rate: 20_000.0,
        seed: 26,
        ..GenConfig::default()
    };
    generate_file(&gen, &rec).expect("generate");
    let batch = RecordingReader::open(&rec)
        .expect("open")
        .next()
        .expect("a batch")
        .expect("read");
    let mut frame = Vec::new();
    FrameWriter::new(&mut frame)
        .write_batch(&batch)
        .expect("encode");
    let app = App::start(
        &dir.path().join("store"),
        &[
            "--idle-timeout-ms",
            "3000",
            "--otlp-read-timeout-ms",
            "1000",
            "--otlp-ack-timeout-ms",
            "1000",
        ],
    );
    let header = |path: &str| {
        format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n")
    };
    let body_after = |path: &str| {
        let mut b = header(path).into_bytes();
        b.extend_from_slice(&[b'{'; 50]);
        b
    };
    // (what, address, bytes, longest it may stay open)
    let cases: Vec<(&str, String, Vec<u8>, Duration)> = vec![
        (
            "telemetry frame trickled",
            app.app.tcp(),
            frame,
            Duration::from_secs(6),
        ),
        (
            "OTLP/HTTP header trickled",
            app.http.clone(),
            header("/v1/traces").into_bytes(),
            Duration::from_secs(6),
        ),
        (
            "OTLP/gRPC preface trickled",
            app.grpc.clone(),
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
            Duration::from_secs(6),
        ),
        // The InfluxDB API's own header-read timeout is 10 s.
        (
            "InfluxDB API header trickled",
            app.influx.clone(),
            header("/query").into_bytes(),
            Duration::from_secs(14),
        ),
    ];
    let threads: Vec<_> = cases
        .into_iter()
        .map(|(what, addr, bytes, most)| {
            std::thread::spawn(move || {
                (what, most, trickle(&addr, &bytes, Duration::from_secs(30)))
            })
        })
        .collect();
    // A body trickled after a whole header: answered 408 and closed by
    // the OTLP read timeout, then by the idle timeout at the latest.
    let (http, body) = (app.http.clone(), body_after("/v1/traces"));
    let (head_len, started) = (header("/v1/traces").len(), Instant::now());
    let mut s = TcpStream::connect(&http).expect("connect");
    s.write_all(&body[..head_len]).expect("send the header");
    let body_closed = trickle_on(&mut s, &body[head_len..], Duration::from_secs(30));
    for t in threads {
        let (what, most, closed) = t.join().expect("trickle thread");
        let took = closed.unwrap_or_else(|| panic!("{what}: still open after 30 s"));
        assert!(
            took <= most,
            "{what}: closed after {took:?}, allowed {most:?}"
        );
        assert!(
            took >= Duration::from_millis(900),
            "{what}: closed after {took:?}: too soon"
        );
    }
    let (took, answer) = body_closed.expect("trickled body: still open after 30 s");
    assert!(
        took <= Duration::from_secs(6),
        "trickled body closed after {took:?} (started {:?} ago)",
        started.elapsed()
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let finals = app.stop();
    let line = finals
        .iter()
        .find(|l| l.starts_with("Final: "))
        .unwrap_or_else(|| panic!("no Final line in {finals:?}"));
    assert!(number_after(line, "closed idle or too slow") >= 3, "{line}");
}

/// [`trickle`] on an open connection; also returns what it answered.
fn trickle_on(s: &mut TcpStream, bytes: &[u8], give_up: Duration) -> Option<(Duration, String)> {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let (mut buf, mut answer) = ([0u8; 1024], Vec::new());
    let mut next = bytes.iter();
    while start.elapsed() < give_up {
        if let Some(b) = next.next() {
            if s.write_all(&[*b]).is_err() {
                return Some((start.elapsed(), String::from_utf8_lossy(&answer).into()));
            }
        }
        match s.read(&mut buf) {
            Ok(0) => return Some((start.elapsed(), String::from_utf8_lossy(&answer).into())),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some((start.elapsed(), String::from_utf8_lossy(&answer).into())),
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    None
}
