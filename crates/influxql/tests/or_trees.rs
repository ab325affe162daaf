//! WHERE clauses with `OR` trees of tag, field and time comparisons
//! against brute force: random records in four series, random trees, and
//! each answer (counts and maxima per group and overall, raw rows, top)
//! equals what walking every record gives. The oracle evaluates each tree
//! per record from its parts, with influxd 1.x's rule for time: every time
//! comparison, inside `OR` or not, is taken out and the ranges intersected
//! (the comparison's operand stands for nothing in its chain).

use std::collections::BTreeMap;

use influxql::{Cell, Limits, SeriesResult};
use loom::{Config, FieldDef, FieldType, FlushMode, IndexDef, Reader, SourceId, SourceSchema};
use proptest::prelude::*;

/// (op, host) of each series; `None`: the series lacks the tag.
const SERIES: &[(&str, Option<&str>)] = &[
    ("read", Some("a")),
    ("read", Some("b")),
    ("write", Some("a")),
    ("write", None),
];

fn schema(op: &str, host: Option<&str>) -> SourceSchema {
    let field = |name: &str, offset: u32| FieldDef {
        name: name.to_string().into(),
        offset,
        ty: FieldType::U64,
    };
    let mut tags = vec![("op".to_string(), op.to_string())];
    if let Some(h) = host {
        tags.push(("host".into(), h.into()));
    }
    tags.sort();
    SourceSchema {
        measurement: "kv".into(),
        tags,
        fields: vec![field("thread_id", 0), field("duration_us", 8)],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 40,
        }),
    }
}

/// One record: series, time µs, thread_id, duration_us.
type Rec = (usize, u64, u64, u64);

/// A condition tree as the statement states it.
#[derive(Debug, Clone)]
enum Tree {
    /// `op = 'read'` (true) or `op != 'read'` (false).
    OpRead(bool),
    /// `host =~ /^a$/` (true) or `host !~ /^a$/`.
    HostA(bool),
    /// `host = ''`: the series without the tag.
    HostEmpty,
    /// `duration_us OP v`.
    Duration(usize, u64),
    /// `thread_id OP v`.
    Thread(usize, u64),
    /// `time >= t` (true) or `time <= t`, in µs.
    Time(bool, u64),
    And(Vec<Tree>),
    Or(Vec<Tree>),
}

const OPS: &[&str] = &["=", "!=", "<", "<=", ">", ">="];

fn holds(v: u64, op: usize, c: u64) -> bool {
    [v == c, v != c, v < c, v <= c, v > c, v >= c][op]
}

impl Tree {
    fn text(&self) -> String {
        match self {
            Tree::OpRead(eq) => format!("op {} 'read'", if *eq { "=" } else { "!=" }),
            Tree::HostA(m) => format!("host {} /^a$/", if *m { "=~" } else { "!~" }),
            Tree::HostEmpty => "host = ''".into(),
            Tree::Duration(op, v) => format!("duration_us {} {v}", OPS[*op]),
            Tree::Thread(op, v) => format!("{v} {} thread_id", flip(OPS[*op])),
            Tree::Time(ge, us) => {
                format!("time {} {}", if *ge { ">=" } else { "<=" }, us * 1000)
            }
            Tree::And(v) => join(v, " AND "),
            Tree::Or(v) => join(v, " OR "),
        }
    }

    /// The time window of every time comparison intersected, in µs.
    fn window(&self, w: &mut (u64, u64)) {
        match self {
            Tree::Time(true, t) => w.0 = w.0.max(*t),
            Tree::Time(false, t) => w.1 = w.1.min(*t),
            Tree::And(v) | Tree::Or(v) => v.iter().for_each(|t| t.window(w)),
            _ => {}
        }
    }

    /// The tree without its time comparisons for a record: `None` when
    /// only time was in it (influxd drops the operand).
    fn eval(&self, r: &Rec) -> Option<bool> {
        let (op, host) = SERIES[r.0];
        Some(match self {
            Tree::OpRead(eq) => (op == "read") == *eq,
            Tree::HostA(m) => (host == Some("a")) == *m,
            Tree::HostEmpty => host.is_none(),
            Tree::Duration(o, v) => holds(r.3, *o, *v),
            Tree::Thread(o, v) => holds(r.2, *o, *v),
            Tree::Time(..) => return None,
            Tree::And(v) => {
                let mut e = v.iter().filter_map(|t| t.eval(r)).peekable();
                e.peek()?;
                e.all(|b| b)
            }
            Tree::Or(v) => {
                let mut e = v.iter().filter_map(|t| t.eval(r)).peekable();
                e.peek()?;
                e.any(|b| b)
            }
        })
    }
}

fn flip(op: &str) -> &str {
    match op {
        "<" => ">",
        "<=" => ">=",
        ">" => "<",
        ">=" => "<=",
        o => o,
    }
}

fn join(v: &[Tree], sep: &str) -> String {
    let parts: Vec<String> = v.iter().map(|t| format!("({})", t.text())).collect();
    parts.join(sep)
}

fn tree_strategy() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Tree::OpRead),
        any::<bool>().prop_map(Tree::HostA),
        Just(Tree::HostEmpty),
        (0usize..6, 0u64..400).prop_map(|(o, v)| Tree::Duration(o, v)),
        (0usize..6, 0u64..8).prop_map(|(o, v)| Tree::Thread(o, v)),
        (any::<bool>(), 0u64..12_000).prop_map(|(g, t)| Tree::Time(g, t)),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(Tree::And),
            prop::collection::vec(inner, 2..4).prop_map(Tree::Or),
        ]
    })
}

fn records() -> impl Strategy<Value = Vec<Rec>> {
    prop::collection::vec((0usize..4, 1u64..20, 0u64..8, 0u64..400), 0..800).prop_map(|v| {
        let mut ts = 0;
        v.into_iter()
            .map(|(s, dt, a, d)| {
                ts += dt;
                (s, ts, a, d)
            })
            .collect()
    })
}

fn build(recs: &[Rec]) -> (tempfile::TempDir, loom::Writer, Reader) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Direct,
        sync_data: false,
        max_index_lag: 16,
        ..Config::default()
    };
    let (mut w, r) = loom::open(dir.path(), config).expect("open");
    let handles: Vec<_> = SERIES
        .iter()
        .enumerate()
        .map(|(i, (op, host))| {
            w.declare(SourceId(1 + i as u64), schema(op, *host))
                .expect("declare")
        })
        .collect();
    for &(s, ts, a, d) in recs {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&a.to_le_bytes());
        b[8..].copy_from_slice(&d.to_le_bytes());
        w.push(handles[s], ts, &b).expect("push");
    }
    w.sync();
    w.wait_for_index().expect("index");
    w.sync();
    (dir, w, r)
}

/// The records the WHERE clause selects, in time order.
fn selected<'a>(tree: &Tree, recs: &'a [Rec]) -> Vec<&'a Rec> {
    let mut w = (0, u64::MAX);
    tree.window(&mut w);
    recs.iter()
        .filter(|r| r.1 >= w.0 && r.1 <= w.1 && tree.eval(r) != Some(false))
        .collect()
}

/// `GROUP BY host, op` tags of a series, sorted by key as influxd prints them.
fn group_tags(s: usize) -> Vec<(String, String)> {
    let (op, host) = SERIES[s];
    vec![
        ("host".into(), host.unwrap_or("").into()),
        ("op".into(), op.into()),
    ]
}

fn series(tags: Vec<(String, String)>, column: &str, values: Vec<Vec<Cell>>) -> SeriesResult {
    SeriesResult {
        name: "kv".into(),
        tags,
        columns: vec!["time".into(), column.into()],
        values,
    }
}

/// What each statement must answer, by brute force.
fn expected(tree: &Tree, recs: &[Rec]) -> Vec<(String, Vec<SeriesResult>)> {
    let sel = selected(tree, recs);
    let mut w = (0, u64::MAX);
    tree.window(&mut w);
    let row_time = Cell::Time(i128::from(w.0) * 1000);
    let cond = tree.text();
    let mut out = Vec::new();

    let mut by_group: BTreeMap<Vec<(String, String)>, Vec<&Rec>> = BTreeMap::new();
    for r in &sel {
        by_group.entry(group_tags(r.0)).or_default().push(r);
    }
    let counts = by_group
        .iter()
        .map(|(tags, rs)| {
            let row = vec![row_time.clone(), Cell::UInt(rs.len() as u64)];
            series(tags.clone(), "count", vec![row])
        })
        .collect();
    out.push((
        format!("SELECT count(duration_us) FROM kv WHERE {cond} GROUP BY host, op"),
        counts,
    ));
    let raw = by_group
        .iter()
        .map(|(tags, rs)| {
            let rows = rs
                .iter()
                .map(|r| vec![Cell::Time(i128::from(r.1) * 1000), Cell::UInt(r.2)])
                .collect();
            series(tags.clone(), "thread_id", rows)
        })
        .collect();
    out.push((
        format!("SELECT thread_id FROM kv WHERE {cond} GROUP BY host, op"),
        raw,
    ));

    let total = if sel.is_empty() {
        vec![]
    } else {
        vec![series(
            vec![],
            "count",
            vec![vec![row_time, Cell::UInt(sel.len() as u64)]],
        )]
    };
    out.push((
        format!("SELECT count(duration_us) FROM kv WHERE {cond}"),
        total,
    ));
    let max = sel.iter().map(|r| r.3).max().map(|m| {
        let t = sel.iter().find(|r| r.3 == m).map_or(0, |r| r.1);
        let row = vec![Cell::Time(i128::from(t) * 1000), Cell::UInt(m)];
        series(vec![], "max", vec![row])
    });
    out.push((
        format!("SELECT max(duration_us) FROM kv WHERE {cond}"),
        max.into_iter().collect(),
    ));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn or_trees_match_brute_force(
        recs in records(),
        trees in prop::collection::vec(tree_strategy(), 6),
    ) {
        let (_dir, _w, reader) = build(&recs);
        let snap = reader.snapshot();
        for tree in &trees {
            for (text, want) in expected(tree, &recs) {
                let got = influxql::run(&snap, &text, 0, &Limits::default())
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?
                    .remove(0)
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(&got.series, &want, "{}", text);
            }
        }
    }
}

#[test]
fn time_inside_or_intersects_as_influxd() {
    // Records at 1..=20 ms in series 0 (read, a) and 2 (write, a).
    let recs: Vec<Rec> = (1..=20u64)
        .flat_map(|k| {
            [
                (0, k * 1000, k % 8, k * 10),
                (2, k * 1000 + 1, k % 8, k * 10),
            ]
        })
        .collect();
    let (_dir, _w, reader) = build(&recs);
    let snap = reader.snapshot();
    let count = |cond: &str| -> u64 {
        let q = format!("SELECT count(duration_us) FROM kv WHERE {cond}");
        let r = influxql::run(&snap, &q, 0, &Limits::default()).expect("runs");
        let r = r.into_iter().next().expect("one").expect("answers");
        match r.series.first().map(|s| &s.values[0][1]) {
            Some(Cell::UInt(n)) => *n,
            None => 0,
            other => panic!("{q}: {other:?}"),
        }
    };
    // Two disjoint windows joined by OR: their intersection is empty.
    assert_eq!(count("time <= 3000000 OR time >= 17000000"), 0);
    // `op = 'read' OR time >= 17 ms`: read records at or after 17 ms.
    assert_eq!(count("op = 'read' OR time >= 17000000"), 4);
    // The time comparison inside the OR still bounds the other operand.
    assert_eq!(count("duration_us > 150 OR time <= 5000000"), 0);
    assert_eq!(
        count("(duration_us >= 150 AND op = 'write') OR op = 'read'"),
        26
    );
}
