//! Parser: parse → print → parse is the identity on generated statements;
//! errors carry the position of the offending token; random and mutated
//! input never panics (a stable-Rust stand-in for a fuzz target).

use influxql::parse::{parse_statement, parse_statements};
use influxql::Error;
use proptest::prelude::*;

fn ident() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["kv", "duration_us", "op", "pfn", "time", "_x1"]).prop_map(String::from),
        1 => prop::sample::select(vec!["\"limit\"", "\"a b\"", "\"q\\\"uote\"", "\"select\""]).prop_map(String::from),
    ]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..u64::MAX).prop_map(|v| v.to_string()),
        (0u32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
        (
            1u32..15_000,
            prop::sample::select(vec!["ns", "u", "ms", "s", "m", "h", "d", "w"])
        )
            .prop_map(|(v, u)| format!("{v}{u}")),
        (0i64..1000).prop_map(|v| format!("-{v}")),
    ]
}

fn operand() -> impl Strategy<Value = String> {
    prop_oneof![
        ident(),
        number(),
        "[a-z' ]{0,6}".prop_map(|s| format!("'{}'", s.replace('\'', "\\'"))),
        (1u32..500).prop_map(|v| format!("now() - {v}s")),
        (1u32..500, 1u32..9).prop_map(|(v, w)| format!("now() + {v}m - {w}ms")),
    ]
}

fn condition() -> impl Strategy<Value = String> {
    let cmp = (
        operand(),
        prop::sample::select(vec!["=", "!=", "<>", "<", "<=", ">", ">="]),
        operand(),
    )
        .prop_map(|(a, o, b)| format!("{a} {o} {b}"));
    cmp.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} AND {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} OR {b}")),
            inner.prop_map(|a| format!("({a})")),
        ]
    })
}

fn projection() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_string()),
        ident(),
        (
            prop::sample::select(vec!["count", "MAX", "percentile", "mean", "foo"]),
            ident()
        )
            .prop_map(|(f, a)| format!("{f}({a})")),
        (ident(), number()).prop_map(|(a, n)| format!("percentile({a}, {n})")),
        (ident(), ident()).prop_map(|(a, b)| format!("{a} AS {b}")),
    ]
}

fn statement() -> impl Strategy<Value = String> {
    let select = (
        prop::collection::vec(projection(), 1..4),
        ident(),
        prop::option::of(condition()),
        prop::option::of((1u32..100, prop::option::of(ident()))),
        prop::option::of(prop::sample::select(vec![
            "fill(null)",
            "fill(none)",
            "fill(previous)",
            "fill(3)",
        ])),
        prop::option::of(prop::sample::select(vec![
            "ORDER BY time DESC",
            "ORDER BY time ASC",
            "order by time",
        ])),
        prop::option::of(0u64..1000),
    )
        .prop_map(|(p, m, c, g, f, o, l)| {
            let mut s = format!("SELECT {} FROM {m}", p.join(", "));
            if let Some(c) = c {
                s += &format!(" WHERE {c}");
            }
            if let Some((iv, tag)) = g {
                s += &format!(" GROUP BY time({iv}s)");
                if let Some(t) = tag {
                    s += &format!(", {t}");
                }
            }
            if let Some(f) = f {
                s += &format!(" {f}");
            }
            if let Some(o) = o {
                s += &format!(" {o}");
            }
            if let Some(l) = l {
                s += &format!(" LIMIT {l}");
            }
            s
        });
    prop_oneof![
        4 => select,
        1 => prop::option::of(0u64..5).prop_map(|l| l.map_or("SHOW MEASUREMENTS".into(), |l| format!("SHOW MEASUREMENTS LIMIT {l}"))),
        1 => prop::option::of(ident()).prop_map(|m| m.map_or("SHOW TAG KEYS".into(), |m| format!("show tag keys from {m}"))),
        1 => (prop::option::of(ident()), ident()).prop_map(|(m, k)| match m {
            Some(m) => format!("SHOW TAG VALUES FROM {m} WITH KEY = {k}"),
            None => format!("SHOW TAG VALUES WITH KEY = {k}"),
        }),
        1 => Just("SHOW FIELD KEYS FROM kv".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn parse_print_parse_is_identity(text in statement()) {
        let ast = parse_statement(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let printed = ast.to_string();
        let again = parse_statement(&printed).map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
        prop_assert_eq!(&ast, &again, "{} → {}", text, printed);
        prop_assert_eq!(printed.clone(), again.to_string());
    }

    #[test]
    fn random_text_never_panics(text in "\\PC{0,80}") {
        let _ = parse_statements(&text);
    }

    #[test]
    fn mutated_statements_never_panic(text in statement(), at in 0usize..200, cut in 0usize..20, ins in "[ -~]{0,4}") {
        let mut t: Vec<char> = text.chars().collect();
        let a = at.min(t.len());
        let b = (a + cut).min(t.len());
        t.splice(a..b, ins.chars());
        let t: String = t.into_iter().collect();
        if let Err(Error::Parse { pos, .. }) = parse_statements(&t) {
            prop_assert!(pos <= t.len());
        }
    }
}

fn err_at(text: &str) -> (usize, String) {
    match parse_statements(text) {
        Err(Error::Parse { pos, message }) => (pos, message),
        other => panic!("{text}: expected a parse error, got {other:?}"),
    }
}

#[test]
fn errors_name_the_position_and_token() {
    let (pos, msg) = err_at("SELECT max(duration_us) FRM kv");
    assert_eq!(pos, 24, "{msg}");
    assert!(msg.contains("FROM") && msg.contains("FRM"), "{msg}");
    let (pos, msg) = err_at("SELECT count(x) FROM kv WHERE time > now() - 80q");
    assert_eq!(pos, 45, "{msg}");
    let (pos, msg) = err_at("SELECT * FROM kv WHERE op =~ /re");
    assert_eq!(pos, 29, "{msg}");
    assert!(msg.contains("regular expression"), "{msg}");
    let (pos, _) = err_at("SHOW TAG VALUES FROM kv WITH KEY");
    assert_eq!(pos, 32);
    let (pos, msg) = err_at("SHOW SHARDS");
    assert_eq!(pos, 5, "{msg}");
    let (pos, msg) = err_at("SELECT * FROM kv; DROP MEASUREMENT kv");
    assert_eq!(pos, 18, "{msg}");
    let (_, msg) = err_at("");
    assert!(msg.contains("empty"));
    let e = parse_statements("SELECT max(duration_us) FRM kv")
        .unwrap_err()
        .to_string();
    assert!(e.contains("at char 25"), "{e}");
}

#[test]
fn canonical_forms() {
    let p = |s: &str| parse_statement(s).expect(s).to_string();
    assert_eq!(
        p("select MAX(duration_us),percentile(duration_us,99.99) from kv where op='read' and time>=now()-80s and time<=now()-20s"),
        "SELECT max(duration_us), percentile(duration_us, 99.99) FROM kv WHERE op = 'read' AND time >= now() - 80s AND time <= now() - 20s"
    );
    assert_eq!(
        p("SELECT \"limit\" FROM \"my kv\""),
        "SELECT \"limit\" FROM \"my kv\""
    );
    assert_eq!(p("SELECT count(x) FROM kv WHERE time > 1700000000000000000 GROUP BY time(60000ms) fill(none)"),
        "SELECT count(x) FROM kv WHERE time > 1700000000000000000 GROUP BY time(1m) fill(none)");
    assert_eq!(
        p("SELECT x FROM db.rp.kv WHERE (a = 1 OR b = 2) AND c <> 3"),
        "SELECT x FROM db.rp.kv WHERE (a = 1 OR b = 2) AND c != 3"
    );
    assert_eq!(p("SELECT x FROM db..kv"), "SELECT x FROM db..kv");
    assert_eq!(
        parse_statements("SHOW MEASUREMENTS; SHOW FIELD KEYS;")
            .unwrap()
            .len(),
        2
    );
}
