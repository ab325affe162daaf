//! Statements that stress the parser's bounds, and a small store to run
//! them on. Shared (with `#[path]`) by `tests/hostile.rs`,
//! `examples/stack_per_level.rs` and `examples/hostile_latency.rs`.

#![allow(dead_code)]

use loom::{Config, FieldDef, FieldType, IndexDef, SourceId, SourceSchema};

/// A comparison that holds for every record of [`store`].
pub const TRUE: &str = "duration_us >= 0";

/// `levels` parentheses, each around an AND of a comparison and the next
/// level, the innermost an AND too: a tree of `levels + 1` chains that
/// plans and runs (counts every record).
pub fn nested_and(levels: usize) -> String {
    let mut s = format!("SELECT count(duration_us) FROM kv WHERE {TRUE}");
    for _ in 0..levels {
        s.push_str(" AND (");
        s.push_str(TRUE);
    }
    s.push_str(" AND ");
    s.push_str(TRUE);
    s.push_str(&")".repeat(levels));
    s
}

/// `levels` parentheses alternating AND and OR of field comparisons: as
/// deep as [`nested_and`]; a field tree every record is checked against
/// (counts every record).
pub fn nested_and_or(levels: usize) -> String {
    let mut s = format!("SELECT count(duration_us) FROM kv WHERE {TRUE}");
    for k in 0..levels {
        s.push_str(if k % 2 == 0 { " AND (" } else { " OR (" });
        s.push_str(TRUE);
    }
    s.push_str(&")".repeat(levels));
    s
}

/// A tag comparison that holds for every series of [`store`].
pub const TAG_TRUE: &str = "op != 'none'";

/// As [`nested_and_or`] with tag comparisons only: an OR tree the planner
/// takes (matched per series), `levels + 1` chains deep.
pub fn nested_tag_and_or(levels: usize) -> String {
    let mut s = format!("SELECT count(duration_us) FROM kv WHERE {TAG_TRUE}");
    for k in 0..levels {
        s.push_str(if k % 2 == 0 { " AND (" } else { " OR (" });
        s.push_str(TAG_TRUE);
    }
    s.push_str(&")".repeat(levels));
    s
}

/// `levels` parentheses around one comparison (the 20 KB body at
/// 10 000 levels).
pub fn parens(levels: usize) -> String {
    format!(
        "SELECT count(duration_us) FROM kv WHERE {}{TRUE}{}",
        "(".repeat(levels),
        ")".repeat(levels)
    )
}

/// Function calls `levels` deep in the select list.
pub fn nested_calls(levels: usize) -> String {
    format!(
        "SELECT {}duration_us{} FROM kv",
        "max(".repeat(levels),
        ")".repeat(levels)
    )
}

/// One WHERE of `terms` comparisons joined by AND.
pub fn and_chain(terms: usize) -> String {
    let mut s = String::from("SELECT count(duration_us) FROM kv WHERE ");
    s.push_str(&vec![TRUE; terms].join(" AND "));
    s
}

/// `n` statements in one query.
pub fn statements(n: usize) -> String {
    vec!["SHOW DATABASES"; n].join(";")
}

/// Time arithmetic `terms` long.
pub fn time_chain(terms: usize) -> String {
    format!(
        "SELECT count(duration_us) FROM kv WHERE time > now(){}",
        " - 1s".repeat(terms)
    )
}

/// Hostile statements the API must refuse with a 400 naming why: (what,
/// query text, a word the message contains).
pub fn refused() -> Vec<(&'static str, String, &'static str)> {
    let nines = "9".repeat(5000);
    vec![
        (
            "10 000 nested parentheses",
            parens(10_000),
            "nested deeper than 100 levels",
        ),
        (
            "5 000 nested AND/OR",
            nested_and_or(5_000),
            "nested deeper than 100 levels",
        ),
        (
            "10 000 nested function calls",
            nested_calls(10_000),
            "error parsing query",
        ),
        (
            "a 20 000-term AND chain",
            and_chain(20_000),
            "longer than the limit",
        ),
        (
            "17 000 statements",
            statements(17_000),
            "more than 1000 statements",
        ),
        (
            "a 5 000-digit integer",
            format!("SELECT * FROM kv WHERE duration_us > {nines}"),
            "fits 64 bits",
        ),
        (
            "a 5 000-digit float",
            format!("SELECT * FROM kv WHERE duration_us > {nines}.5"),
            "64-bit float",
        ),
        (
            "a duration past 64-bit ns",
            "SELECT * FROM kv WHERE time > now() - 18446744073709551615w".into(),
            "64-bit nanoseconds",
        ),
        (
            "a 5 000-digit duration",
            format!("SELECT * FROM kv WHERE time > now() - {nines}s"),
            "fits 64 bits",
        ),
        (
            "NUL in an identifier",
            "SELECT \"dura\0tion_us\" FROM kv".into(),
            "NUL",
        ),
        (
            "NUL in a string",
            "SELECT * FROM kv WHERE op = 're\0ad'".into(),
            "NUL",
        ),
    ]
}

/// A store with one measurement `kv` (tag `op`, field `duration_us`
/// indexed): `per_series` records at 1 ms steps in each of two series.
pub fn store(per_series: u64) -> (tempfile::TempDir, loom::Writer, loom::Reader) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut w, r) = loom::open(dir.path(), Config::default()).expect("open");
    let mut handles = Vec::new();
    for (id, op) in [(1, "read"), (2, "write")] {
        let schema = SourceSchema {
            measurement: "kv".into(),
            tags: vec![("op".into(), op.into())],
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
        };
        handles.push(w.declare(SourceId(id), schema).expect("declare"));
    }
    for i in 1..=per_series {
        for h in &handles {
            w.push(*h, 1_000 * i, &(i * 7 % 1000).to_le_bytes())
                .expect("push");
        }
    }
    w.sync();
    (dir, w, r)
}
