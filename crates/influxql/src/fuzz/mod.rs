//! Bodies of the InfluxQL fuzz targets, shared by the cargo-fuzz targets
//! (`crates/influxql/fuzz/`, nightly) and the stable `fuzz-smoke` driver. Built
//! only with the `fuzz` feature.
//!
//! - [`statement`]: any bytes as query text. Whatever parses prints back
//!   to text that parses to the same tree, and plans against a small store
//!   without panicking; whatever does not parse is refused with a position
//!   inside the text.
//! - [`query_request`]: any bytes as a whole `/query` request as the HTTP
//!   layer hands it over (method, query string, content type, form body,
//!   credentials; see [`request`]); the answer is a status the API
//!   documents with a JSON body, `{"error": …}` for every 4xx.
//!
//! Both return normally for any input and panic when a property breaks.
//! A stack overflow cannot be caught: the drivers see it as an abort,
//! which is why the parser bounds depth ([`crate::parse::depth`]).

pub mod fixture;

use std::cell::OnceCell;

use serde_json::Value;

use crate::error::Error;
use crate::http::{handle, HttpConfig, Request};
use crate::parse::{parse_statements, parse_statements_within, TextLimits};
use crate::plan::{plan, Catalog};
use fixture::Fixture;

/// `now()` of the statement target's plans: just past the fixture's records.
const NOW_NS: i128 = 300_000_000_000;

/// The token of requests whose flags ask for authentication.
pub const TOKEN: &str = "s3cret";

thread_local! {
    static FIXTURE: OnceCell<Fixture> = const { OnceCell::new() };
}

/// Runs `f` on the fixture store, built on first use.
fn with_fixture<T>(f: impl FnOnce(&Fixture) -> T) -> T {
    FIXTURE.with(|cell| {
        let fx = cell.get_or_init(|| Fixture::new().expect("building the fuzz fixture store"));
        f(fx)
    })
}

/// Any bytes as query text (invalid UTF-8 replaced, as the HTTP layer's
/// form decoding does).
pub fn statement(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let statements = match parse_statements(&text) {
        Ok(s) => s,
        Err(Error::Parse { pos, message }) => {
            assert!(pos <= text.len(), "error position {pos} past the text");
            assert!(!message.is_empty(), "a parse error without a message");
            return;
        }
        Err(e) => panic!("parsing failed with a non-parse error: {e}"),
    };
    // The printed form may be longer than the input (spaces around
    // operators): only the text limits are lifted, never the depth bound.
    let unbounded = TextLimits {
        max_bytes: usize::MAX,
        max_statements: 1,
    };
    with_fixture(|fx| {
        let snap = fx.reader.snapshot();
        let catalog = Catalog::of(&snap);
        for s in &statements {
            let printed = s.to_string();
            let again = parse_statements_within(&printed, &unbounded)
                .unwrap_or_else(|e| panic!("printed {printed:?} does not parse: {e}"));
            assert_eq!(again.len(), 1, "printed {printed:?}");
            assert_eq!(
                &again[0], s,
                "print → parse changed the tree of {printed:?}"
            );
            let _ = plan(s, &catalog, NOW_NS);
        }
    });
}

/// Reads a fuzz input as a request. Byte 0 holds flags: bit 0 POST (else
/// GET), bit 1 a form content type, bit 2 the server wants [`TOKEN`],
/// bits 3–4 the path (`/query`, `/query`, `/ping`, `/write`); bytes 1–2
/// the query string's length (little-endian, clipped to what is there),
/// then the query string (invalid UTF-8 replaced: hyper hands over text),
/// then the body. The second value says whether auth is required.
pub fn request(input: &[u8]) -> (Request, bool) {
    let flags = input.first().copied().unwrap_or(0);
    let rest = input.get(1..).unwrap_or_default();
    let (len, rest) = match rest {
        [a, b, tail @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), tail),
        _ => (0, rest),
    };
    let (query, body) = rest.split_at(len.min(rest.len()));
    let mut headers = Vec::new();
    if flags & 2 != 0 {
        headers.push((
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ));
    }
    let path = ["/query", "/query", "/ping", "/write"][usize::from(flags >> 3 & 3)];
    let req = Request {
        method: if flags & 1 != 0 { "POST" } else { "GET" }.into(),
        path: path.into(),
        query: String::from_utf8_lossy(query).into_owned(),
        headers,
        body: body.to_vec(),
    };
    (req, flags & 4 != 0)
}

/// The fuzz input that [`request`] reads as a request with these parts.
pub fn encode_request(flags: u8, query: &str, body: &[u8]) -> Vec<u8> {
    let q = &query.as_bytes()[..query.len().min(usize::from(u16::MAX))];
    let mut out = vec![flags];
    out.extend_from_slice(&(q.len() as u16).to_le_bytes());
    out.extend_from_slice(q);
    out.extend_from_slice(body);
    out
}

/// The server settings of the request target: small bounds, so inputs
/// reach them, and a short timeout.
fn config(auth: bool) -> HttpConfig {
    HttpConfig {
        auth_token: auth.then(|| TOKEN.to_string()),
        query_timeout: std::time::Duration::from_secs(1),
        max_rows: 5_000,
        text_limits: TextLimits {
            max_bytes: 16 << 10,
            max_statements: 16,
        },
        ..HttpConfig::default()
    }
}

/// Any bytes as a `/query` request (see [`request`]).
pub fn query_request(input: &[u8]) {
    let (req, auth) = request(input);
    let cfg = config(auth);
    let resp = with_fixture(|fx| handle(&fx.reader, &cfg, &req));
    const DOCUMENTED: [u16; 7] = [200, 204, 400, 401, 404, 405, 501];
    assert!(
        DOCUMENTED.contains(&resp.status),
        "status {} for {req:?}: {}",
        resp.status,
        String::from_utf8_lossy(&resp.body)
    );
    if resp.status == 204 {
        assert!(resp.body.is_empty(), "a 204 with a body");
        return;
    }
    let v: Value = serde_json::from_slice(&resp.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&resp.body)));
    if resp.status >= 400 {
        let msg = v["error"].as_str().unwrap_or_default();
        assert!(
            !msg.is_empty(),
            "a {} without an error message: {v}",
            resp.status
        );
        return;
    }
    let results = v["results"]
        .as_array()
        .unwrap_or_else(|| panic!("a 200 without results: {v}"));
    assert!(
        !results.is_empty() && results.len() <= cfg.text_limits.max_statements,
        "{} results",
        results.len()
    );
}
