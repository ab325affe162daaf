//! No InfluxQL statement takes loom-app down. A real loom-app process gets
//! hostile statements — parentheses and function calls nested 10 000 deep,
//! a 20 000-term AND chain, 17 000 statements in one request, numbers and
//! durations past 64 bits, NUL bytes and
//! invalid UTF-8 in identifiers and strings — each answered 4xx with a
//! message naming why (and hostile regular expressions: refused past the
//! size limit, answered at once otherwise), by GET and by form POST, while one client keeps
//! sending spans over OTLP/HTTP and another keeps asking a valid query:
//! every span sent is stored, every valid query answered, the process
//! still runs. `loom query` refuses a too-deep statement with the same
//! message and exit status 1, against the server and against the store.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

#[path = "support/otlp.rs"]
mod support;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use support::{http, post, query, App};

const PROTOBUF: &str = "Content-Type: application/x-protobuf\r\n";
const FORM: &str = "Content-Type: application/x-www-form-urlencoded\r\n";
/// Longest URI hyper takes (the `http` crate's limit); it refuses longer
/// ones itself with 414 (or 431), before any handler.
const URI_MAX: usize = 65_534;
const COUNT: &str = "SELECT count(duration_us) FROM span WHERE service = 'svc'";

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// `n` spans of service `svc` starting at `t0_us`, 1 µs apart.
fn spans(t0_us: u64, n: u64) -> Vec<u8> {
    let resource = Resource {
        attributes: vec![KeyValue {
            key: "service.name".into(),
            value: Some(AnyValue {
                value: Some(Any::StringValue("svc".into())),
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let spans = (0..n)
        .map(|k| Span {
            trace_id: vec![7; 16],
            span_id: (t0_us + k).to_le_bytes().to_vec(),
            name: "op".into(),
            kind: 2,
            start_time_unix_nano: (t0_us + k) * 1000,
            end_time_unix_nano: (t0_us + k + 50) * 1000,
            ..Default::default()
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// Hostile query texts (as bytes: some are not UTF-8), the status and a
/// word of the message.
fn hostile() -> Vec<(&'static str, Vec<u8>, u16, &'static str)> {
    let t = "duration_us >= 0";
    let nines = "9".repeat(5000);
    let deep = |open: &str, close: &str| {
        format!(
            "SELECT count(duration_us) FROM span WHERE {}{t}{}",
            open.repeat(10_000),
            close.repeat(10_000)
        )
    };
    let s = |x: String| x.into_bytes();
    vec![
        (
            "10 000 nested parentheses",
            s(deep("(", ")")),
            400,
            "nested deeper than 100 levels",
        ),
        (
            "10 000 nested AND (",
            s(deep(&format!("{t} AND ("), ")")),
            400,
            "nested deeper than 100 levels",
        ),
        (
            "10 000 nested calls",
            s(format!(
                "SELECT {}duration_us{} FROM span",
                "max(".repeat(10_000),
                ")".repeat(10_000)
            )),
            400,
            "error parsing query",
        ),
        (
            "a 20 000-term AND chain",
            s(format!(
                "SELECT count(duration_us) FROM span WHERE {}",
                vec![t; 20_000].join(" AND ")
            )),
            400,
            "longer than the limit of 262144 bytes",
        ),
        (
            "17 000 statements",
            s(vec!["SHOW DATABASES"; 17_000].join(";")),
            400,
            "more than 1000 statements",
        ),
        (
            "a 5 000-digit integer",
            s(format!("SELECT * FROM span WHERE duration_us > {nines}")),
            400,
            "64 bits",
        ),
        (
            "a 5 000-digit float",
            s(format!("SELECT * FROM span WHERE duration_us > {nines}.5")),
            400,
            "64-bit float",
        ),
        (
            "a duration past 64-bit ns",
            s("SELECT * FROM span WHERE time > now() - 18446744073709551615w".into()),
            400,
            "64-bit nanoseconds",
        ),
        (
            "a 5 000-digit duration",
            s(format!("SELECT * FROM span WHERE time > now() - {nines}s")),
            400,
            "64 bits",
        ),
        (
            "NUL in an identifier",
            s("SELECT \"dura\0tion_us\" FROM span".into()),
            400,
            "NUL",
        ),
        (
            "NUL in a string",
            s("SELECT * FROM span WHERE name = 'o\0p'".into()),
            400,
            "NUL",
        ),
        (
            "invalid UTF-8 in an identifier",
            b"SELECT \"dur\xffation_us\" FROM span".to_vec(),
            400,
            "not valid UTF-8",
        ),
        (
            "invalid UTF-8 in a string",
            b"SELECT * FROM span WHERE name = 'o\xc3'".to_vec(),
            400,
            "not valid UTF-8",
        ),
        // Regular expressions: a program past the size limit is refused at
        // plan time (a statement error, as InfluxDB reports them); a
        // pattern backtracking engines take exponential time on, and a
        // 30 000-way alternation, are answered (or refused) at once: the
        // answer's content does not matter, only that it comes and that
        // ingest and the other client go on.
        (
            "a regex compiling past 1 MiB",
            s("SELECT count(duration_us) FROM span WHERE service =~ /x{1000}{1000}/".into()),
            200,
            "refused",
        ),
        (
            "a nested-quantifier regex",
            s(format!(
                "SELECT count(duration_us) FROM span WHERE service =~ /^(a|aa)+$/ OR name =~ /^({})+$/",
                "a?".repeat(2000)
            )),
            200,
            "",
        ),
        (
            "a 30 000-way alternation",
            s(format!(
                "SHOW TAG VALUES WITH KEY =~ /^({})$/",
                (0..30_000).map(|i| i.to_string()).collect::<Vec<_>>().join("|")
            )),
            200,
            "",
        ),
    ]
}

/// Percent-encodes every byte that is not unreserved (also invalid UTF-8).
fn encode(q: &[u8]) -> String {
    q.iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn error_of(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_else(|e| {
        panic!(
            "{e}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        )
    });
    // A whole-request error, else the first statement's.
    v["error"]
        .as_str()
        .or_else(|| v["results"][0]["error"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// `loom query` with `args` and `q`: (exit code, stdout + stderr).
fn loom_query(args: &[&str], q: &str) -> (i32, String) {
    let o = Command::new(testing::binary("loom"))
        .arg("query")
        .args(args)
        .arg(q)
        .output()
        .expect("loom query");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), out)
}

#[test]
fn hostile_statements_get_4xx_while_ingest_and_other_queries_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let app = App::start(&store, &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));

    // Client 1: spans over OTLP/HTTP, 100 per request, until told to stop.
    let sender = {
        let (addr, stop, sent) = (app.http.clone(), stop.clone(), sent.clone());
        std::thread::spawn(move || {
            let mut t = now_us();
            while !stop.load(Ordering::SeqCst) {
                let (status, _, body) = post(&addr, "/v1/traces", PROTOBUF, &spans(t, 100));
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                sent.fetch_add(100, Ordering::SeqCst);
                t += 1000;
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    // Client 2: a valid query in a loop; every answer is a 200 without error.
    let asker = {
        let (addr, stop) = (app.influx.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut answered = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let v = query(
                    &addr,
                    "SHOW MEASUREMENTS; SELECT count(duration_us) FROM span",
                );
                assert!(v["results"][1].get("error").is_none(), "{v}");
                answered += 1;
            }
            answered
        })
    };

    for round in 0..3 {
        for (what, q, status, word) in hostile() {
            let (s, _, body) = post(
                &app.influx,
                "/query",
                FORM,
                format!("q={}", encode(&q)).as_bytes(),
            );
            let msg = error_of(&body);
            assert_eq!(s, status, "round {round}, {what} by POST: {msg}");
            assert!(msg.contains(word), "{what} by POST: {msg}");
            let uri = format!("/query?db=loom&q={}", encode(&q));
            let req = format!("GET {uri} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let (s, _, body) = http(&app.influx, req.as_bytes());
            if uri.len() <= URI_MAX {
                let msg = error_of(&body);
                assert_eq!(s, status, "{what} by GET: {msg}");
                assert!(msg.contains(word), "{what} by GET: {msg}");
            } else {
                // Past hyper's header buffer (about 400 KB): 431.
                assert!(
                    matches!(s, 414 | 431),
                    "{what} by GET ({} bytes): {s}",
                    uri.len()
                );
            }
        }
    }

    stop.store(true, Ordering::SeqCst);
    sender.join().expect("the span sender saw only 200s");
    let answered = asker
        .join()
        .expect("the other client's queries were all answered");
    assert!(answered > 0);
    let sent = sent.load(Ordering::SeqCst);
    assert!(sent > 0);
    support::wait_count(&app.influx, COUNT, sent);

    // `loom query`: the same refusal, exit 1, from the server and the store.
    let deep = format!(
        "SELECT count(duration_us) FROM span WHERE {}duration_us >= 0{}",
        "(".repeat(500),
        ")".repeat(500)
    );
    let url = format!("http://{}", app.influx);
    let (code, out) = loom_query(&["--server", &url], &deep);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nested deeper than 100 levels"), "{out}");
    let (code, out) = loom_query(&["--store", &store.to_string_lossy()], &deep);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nested deeper than 100 levels"), "{out}");
    let (code, out) = loom_query(&["--server", &url], COUNT);
    assert_eq!(code, 0, "{out}");

    let mut app = app;
    assert!(app.running(), "loom-app exited");
    app.stop();
}
