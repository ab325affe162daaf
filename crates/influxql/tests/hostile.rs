//! No statement can exhaust the stack or run unbounded: nesting past
//! `MAX_DEPTH`, over-long text and too many statements are refused with
//! a message naming the limit (HTTP 400); the full depth runs the whole
//! path (parse, plan, execute, print, drop) on a quarter of the smallest
//! stack queries run on; long chains cost no depth and answer exactly.

#[path = "support/hostile.rs"]
mod hostile;

use hostile::{
    and_chain, nested_and, nested_and_or, nested_tag_and_or, parens, refused, statements, store,
    time_chain,
};
use influxql::http::{handle, HttpConfig, Request};
use influxql::parse::{depth::SMALLEST_QUERY_STACK, parse_statement, Condition, Statement};
use influxql::parse::{parse_statements_within, TextLimits, MAX_DEPTH};
use influxql::{Cell, Error, Limits};

/// The one count a statement answers.
fn count(r: &loom::Reader, q: &str) -> influxql::Result<u64> {
    let mut results = influxql::run(&r.snapshot(), q, 0, &Limits::default())?;
    let s = results.remove(0)?;
    match s.series[0].values[0][1] {
        Cell::UInt(n) => Ok(n),
        Cell::Int(n) => Ok(n as u64),
        ref c => panic!("{q}: a count of {c:?}"),
    }
}

fn parse_error(q: &str) -> (usize, String) {
    match influxql::parse::parse_statements(q) {
        Err(Error::Parse { pos, message }) => (pos, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn full_depth_runs_on_a_quarter_of_the_smallest_stack() {
    let (_dir, _w, r) = store(50);
    let t = std::thread::Builder::new()
        .stack_size(SMALLEST_QUERY_STACK / 4)
        .spawn(move || {
            let q = nested_and(MAX_DEPTH);
            assert_eq!(count(&r, &q).expect(&q[..60]), 100);
            let ast = parse_statement(&q).expect("parses");
            let printed = ast.to_string();
            assert_eq!(parse_statement(&printed).expect("printed parses"), ast);
            let copy = ast.clone();
            assert!(format!("{copy:?}").len() > q.len());
            drop(copy);
            // An OR tree of fields as deep plans and runs, checked per record.
            assert_eq!(
                count(&r, &nested_and_or(MAX_DEPTH)).expect("field tree"),
                100
            );
            // An OR tree of tags as deep plans (matched per series) and runs.
            assert_eq!(
                count(&r, &nested_tag_and_or(MAX_DEPTH)).expect("tag tree"),
                100
            );
            assert_eq!(count(&r, &parens(MAX_DEPTH)).expect("100 parentheses"), 100);
        })
        .expect("spawn");
    t.join().expect("the full depth ran");
}

#[test]
fn one_level_past_the_limit_is_refused_where_it_starts() {
    let q = parens(MAX_DEPTH + 1);
    let (pos, msg) = parse_error(&q);
    // At the 101st parenthesis, after the 100 the limit allows.
    assert_eq!(&q[pos..pos + 1], "(");
    let where_at = q.find("WHERE").expect("WHERE");
    assert_eq!(q[where_at..pos].matches('(').count(), MAX_DEPTH, "{msg}");
    assert!(msg.contains("nested deeper than 100 levels"), "{msg}");
    let e = Error::Parse { pos, message: msg }.to_string();
    assert!(
        e.starts_with("error parsing query: statement nested deeper than 100 levels"),
        "{e}"
    );
    let (_, msg) = parse_error(&nested_and(MAX_DEPTH + 1));
    assert!(msg.contains("deeper than 100"), "{msg}");
}

#[test]
fn long_chains_cost_no_depth_and_answer_exactly() {
    let (_dir, _w, r) = store(50);
    let q = and_chain(10_000);
    assert!(q.len() < TextLimits::default().max_bytes);
    assert_eq!(count(&r, &q).expect("10 000 ANDs"), 100);
    match parse_statement(&q).expect("parses") {
        Statement::Select(s) => match s.condition {
            Some(Condition::And(items)) => assert_eq!(items.len(), 10_000),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // `now() - 1s - 1s …`: 10 000 s before now (0 here): nothing is after it... every record is.
    assert_eq!(count(&r, &time_chain(10_000)).expect("time chain"), 100);
}

#[test]
fn text_bounds_hold_at_their_edges() {
    let limits = TextLimits {
        max_bytes: 1000,
        max_statements: 10,
    };
    assert_eq!(
        parse_statements_within(&statements(10), &limits).map(|v| v.len()),
        Ok(10)
    );
    let q = statements(11);
    match parse_statements_within(&q, &limits) {
        Err(Error::Parse { pos, message }) => {
            assert_eq!(pos, 10 * "SHOW DATABASES;".len());
            assert!(message.contains("more than 10 statements"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let q = format!("SHOW DATABASES{}", " ".repeat(986));
    assert_eq!(q.len(), 1000);
    assert!(parse_statements_within(&q, &limits).is_ok());
    match parse_statements_within(&format!("{q} "), &limits) {
        Err(Error::Parse { message, .. }) => {
            assert!(
                message.contains("1001 bytes is longer than the limit of 1000"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
}

fn get(q: &[u8]) -> Request {
    let enc: String = percent_encode(q);
    Request {
        method: "GET".into(),
        path: "/query".into(),
        query: format!("db=loom&q={enc}"),
        ..Request::default()
    }
}

fn percent_encode(b: &[u8]) -> String {
    b.iter().map(|b| format!("%{b:02X}")).collect()
}

fn error_of(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).expect("JSON");
    v["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn hostile_requests_get_400_naming_why() {
    let (_dir, _w, r) = store(50);
    let cfg = HttpConfig::default();
    for (what, q, word) in refused() {
        for req in [get(q.as_bytes()), {
            Request {
                method: "POST".into(),
                path: "/query".into(),
                headers: vec![(
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                )],
                body: format!("q={}", percent_encode(q.as_bytes())).into_bytes(),
                ..Request::default()
            }
        }] {
            let resp = handle(&r, &cfg, &req);
            let msg = error_of(&resp.body);
            assert_eq!(resp.status, 400, "{what}: {msg}");
            assert!(msg.contains(word), "{what}: {msg}");
        }
    }
    // Invalid UTF-8 in an identifier, a string and a parameter name.
    for q in [
        &b"SELECT \"dur\xffation\" FROM kv"[..],
        b"SELECT * FROM kv WHERE op = '\xc3'",
    ] {
        let resp = handle(&r, &cfg, &get(q));
        let msg = error_of(&resp.body);
        assert_eq!(resp.status, 400, "{msg}");
        assert!(
            msg.contains("parameter \"q\"") && msg.contains("not valid UTF-8"),
            "{msg}"
        );
    }
    let mut req = get(b"SHOW DATABASES");
    req.query.push_str("&%FE=1");
    let resp = handle(&r, &cfg, &req);
    assert_eq!(resp.status, 400);
    assert!(error_of(&resp.body).contains("parameter name"));
    // And the same server answers a valid query after all of them.
    let resp = handle(&r, &cfg, &get(b"SELECT count(duration_us) FROM kv"));
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
}
