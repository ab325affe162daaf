//! The HTTP API through a real socket: ping, GET and form POST queries,
//! epochs, several statements, auth, and clear 4xx for bad requests; the
//! request handler never panics on random requests.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use influxql::http::{handle, serve, HttpConfig, Request};
use loom::{Config, FieldDef, FieldType, IndexDef, SourceId, SourceSchema};
use proptest::prelude::*;
use serde_json::Value;

fn store() -> (tempfile::TempDir, loom::Writer, loom::Reader) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut w, r) = loom::open(dir.path(), Config::default()).expect("open");
    let h = w
        .declare(
            SourceId(7),
            SourceSchema {
                measurement: "kv".into(),
                tags: vec![("op".into(), "read".into())],
                fields: vec![FieldDef {
                    name: "duration_us".into(),
                    offset: 0,
                    ty: FieldType::U64,
                }],
                index: Some(IndexDef {
                    field: "duration_us".into(),
                    min: 0,
                    interval: 10,
                    n_bins: 100,
                }),
            },
        )
        .expect("declare");
    for i in 1..=100u64 {
        w.push(h, 1_000_000 * i, &(i * 3).to_le_bytes())
            .expect("push");
    }
    w.sync();
    (dir, w, r)
}

/// Sends raw bytes, returns (status, headers, body).
fn raw(addr: &str, req: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s.write_all(req).expect("write");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_lowercase(), body.to_string())
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn get(addr: &str, params: &str, extra: &str) -> (u16, String, String) {
    raw(
        addr,
        format!("GET /query?{params} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n")
            .as_bytes(),
    )
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn api_answers_like_influxdb_1x() {
    let (_d, _w, r) = store();
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let server = serve(l, r, HttpConfig::default()).expect("serve");
    let addr = server.local_addr().to_string();

    let (st, head, _) = raw(
        &addr,
        b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(st, 204);
    assert!(head.contains("x-influxdb-version: 1.6.7-loom"), "{head}");
    assert!(head.contains("x-influxdb-build: oss"), "{head}");

    let q = enc("SELECT max(duration_us), percentile(duration_us, 50) FROM kv WHERE op = 'read'; SELECT count(duration_us) FROM kv WHERE time >= 50000000u");
    let (st, _, body) = get(&addr, &format!("db=x&q={q}&epoch=s"), "");
    assert_eq!(st, 200, "{body}");
    let v = json(&body);
    assert_eq!(v["results"][0]["statement_id"], 0);
    assert_eq!(
        v["results"][0]["series"][0]["columns"],
        serde_json::json!(["time", "max", "percentile"])
    );
    assert_eq!(
        v["results"][0]["series"][0]["values"][0],
        serde_json::json!([0, 300, 150])
    );
    assert_eq!(v["results"][1]["statement_id"], 1);
    assert_eq!(
        v["results"][1]["series"][0]["values"][0],
        serde_json::json!([50, 51])
    );

    // RFC 3339 by default; a selector alone reports its point's time.
    let (_, _, body) = get(
        &addr,
        &format!("q={}", enc("SELECT max(duration_us) FROM kv")),
        "",
    );
    assert_eq!(
        json(&body)["results"][0]["series"][0]["values"][0],
        serde_json::json!(["1970-01-01T00:01:40Z", 300])
    );

    // Form POST.
    let form = format!("q={}&epoch=ms", enc("SELECT min(duration_us) FROM kv"));
    let (st, _, body) = raw(
        &addr,
        format!("POST /query HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}", form.len()).as_bytes(),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(
        json(&body)["results"][0]["series"][0]["values"][0],
        serde_json::json!([1000, 3])
    );

    // Refusals: outside the subset, parse errors, semantic errors, bad params.
    let (st, _, body) = get(
        &addr,
        &format!(
            "q={}",
            enc("SELECT distinct(duration_us), max(duration_us) FROM kv")
        ),
        "",
    );
    assert_eq!(st, 400);
    assert!(
        json(&body)["error"]
            .as_str()
            .unwrap_or("")
            .contains("distinct()"),
        "{body}"
    );
    let (st, _, body) = get(
        &addr,
        &format!(
            "q={}",
            enc("SELECT * FROM kv WHERE duration_us =~ /1/ OR op = 'b'")
        ),
        "",
    );
    assert_eq!(st, 400);
    assert!(body.contains("regular expressions on fields"), "{body}");
    let (st, _, body) = get(&addr, &format!("q={}", enc("SELECT max(x FROM kv")), "");
    assert_eq!(st, 400);
    assert!(body.contains("at char"), "{body}");
    let (st, _, body) = get(&addr, &format!("q={}", enc("SELECT max(nope) FROM kv")), "");
    assert_eq!(st, 200);
    assert!(
        json(&body)["results"][0]["error"]
            .as_str()
            .unwrap_or("")
            .contains("nope"),
        "{body}"
    );
    let (st, _, body) = get(
        &addr,
        &format!("q={}", enc("SELECT percentile(op, 5) FROM kv")),
        "",
    );
    assert_eq!(st, 200);
    assert!(
        body.contains("percentile() needs a numeric field"),
        "{body}"
    );
    let (st, _, body) = get(&addr, "db=x", "");
    assert_eq!(st, 400);
    assert!(body.contains("\\\"q\\\"") || body.contains("q"), "{body}");
    let (st, _, body) = get(
        &addr,
        &format!("q={}&epoch=fortnight", enc("SHOW MEASUREMENTS")),
        "",
    );
    assert_eq!(st, 400, "{body}");
    let (st, _, _) = raw(
        &addr,
        b"DELETE /query HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(st, 405);
    let (st, _, _) = raw(
        &addr,
        b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(st, 404);
    let big = vec![b'a'; (1 << 20) + 10];
    let mut req = format!("POST /query HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", big.len()).into_bytes();
    req.extend_from_slice(&big);
    let (st, _, _) = raw(&addr, &req);
    assert_eq!(st, 413);
    let (st, _, _) = raw(&addr, b"this is not http\r\n\r\n");
    assert!(st == 400 || st == 0, "{st}");
    server.stop();
}

#[test]
fn token_is_required_when_configured() {
    let (_d, _w, r) = store();
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let cfg = HttpConfig {
        auth_token: Some("s3cret".into()),
        ..HttpConfig::default()
    };
    let server = serve(l, r, cfg).expect("serve");
    let addr = server.local_addr().to_string();
    let q = format!("q={}", enc("SHOW MEASUREMENTS"));
    assert_eq!(get(&addr, &q, "").0, 401);
    assert_eq!(get(&addr, &format!("{q}&u=me&p=wrong"), "").0, 401);
    assert_eq!(get(&addr, &format!("{q}&u=me&p=s3cret"), "").0, 200);
    assert_eq!(get(&addr, &q, "Authorization: Token s3cret\r\n").0, 200);
    assert_eq!(get(&addr, &q, "Authorization: Token nope\r\n").0, 401);
    // base64("me:s3cret")
    assert_eq!(
        get(&addr, &q, "Authorization: Basic bWU6czNjcmV0\r\n").0,
        200
    );
    assert_eq!(get(&addr, &q, "Authorization: Basic !!!\r\n").0, 401);
    server.stop();
}

#[test]
fn row_limit_is_an_error_not_a_truncation() {
    let (_d, _w, r) = store();
    let cfg = HttpConfig {
        max_rows: 10,
        ..HttpConfig::default()
    };
    let req = Request {
        method: "GET".into(),
        path: "/query".into(),
        query: format!("q={}", enc("SELECT * FROM kv")),
        ..Request::default()
    };
    let resp = handle(&r, &cfg, &req);
    let body = String::from_utf8_lossy(&resp.body).to_string();
    assert!(body.contains("row limit"), "{body}");
    let req = Request {
        query: format!("q={}", enc("SELECT * FROM kv LIMIT 5")),
        ..req
    };
    let body = String::from_utf8_lossy(&handle(&r, &cfg, &req).body).to_string();
    assert_eq!(
        json(&body)["results"][0]["series"][0]["values"]
            .as_array()
            .map(Vec::len),
        Some(5)
    );
}

#[test]
fn handler_never_panics() {
    let (_d, _w, r) = store();
    let cfg = HttpConfig {
        max_rows: 50,
        ..HttpConfig::default()
    };
    let strategy = (
        prop::sample::select(vec!["GET", "POST", "HEAD", "PUT", ""]),
        prop::sample::select(vec!["/query", "/ping", "/", "/write", "//query"]),
        "[ -~]{0,60}",
        prop::sample::select(vec![
            "SELECT",
            "SELECT max(duration_us) FROM kv GROUP BY time(1u)",
            "SHOW TAG VALUES WITH KEY = op",
            "SELECT * FROM kv ORDER BY time DESC LIMIT 2",
            "SELECT mean(duration_us) FROM kv WHERE duration_us > 1.5 AND time < now()",
        ]),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<bool>(),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 3000,
        ..ProptestConfig::default()
    });
    runner
        .run(&strategy, |(method, path, query, q, body, form)| {
            let req = Request {
                method: method.into(),
                path: path.into(),
                query: format!("{query}&q={}", enc(q)),
                headers: if form {
                    vec![(
                        "content-type".into(),
                        "application/x-www-form-urlencoded".into(),
                    )]
                } else {
                    vec![]
                },
                body,
            };
            let resp = handle(&r, &cfg, &req);
            prop_assert!((200..600).contains(&resp.status));
            if resp.status != 204 {
                prop_assert!(serde_json::from_slice::<Value>(&resp.body).is_ok());
            }
            Ok(())
        })
        .expect("handler answers every request with a status and JSON");
}

#[test]
fn query_time_limit_stops_with_an_error() {
    let (_d, _w, r) = store();
    let cfg = HttpConfig {
        query_timeout: Duration::ZERO,
        ..HttpConfig::default()
    };
    let req = Request {
        method: "GET".into(),
        path: "/query".into(),
        query: format!("q={}", enc("SELECT max(duration_us) FROM kv")),
        ..Request::default()
    };
    let resp = handle(&r, &cfg, &req);
    let body = String::from_utf8_lossy(&resp.body).to_string();
    assert!(body.contains("timeout"), "{body}");
}
