//! Random records in several series, random statements of the subset:
//! every answer equals brute force over the same records, computed here
//! independently from the statement's parts (not from its text).
//! Windows fall in memory, on disk, across both and beyond the data.

use std::collections::BTreeMap;

use influxql::encode::rfc3339;
use influxql::{Cell, Limits, SeriesResult};
use loom::{Config, FieldDef, FieldType, FlushMode, IndexDef, Reader, SourceId, SourceSchema};
use proptest::prelude::*;

fn field(name: &str, offset: u32, ty: FieldType) -> FieldDef {
    FieldDef {
        name: name.to_string().into(),
        offset,
        ty,
    }
}

/// (measurement, tags, fields, indexed) of each test series; kv read/write
/// share a measurement.
fn schemas() -> Vec<SourceSchema> {
    let kv = |op: &str| SourceSchema {
        measurement: "kv".into(),
        tags: vec![("op".into(), op.into())],
        fields: vec![
            field("thread_id", 0, FieldType::U32),
            field("start_us", 8, FieldType::U64),
            field("duration_us", 16, FieldType::U64),
        ],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 40,
        }),
    };
    vec![
        kv("read"),
        kv("write"),
        SourceSchema {
            measurement: "syscall".into(),
            tags: vec![
                ("name".into(), "pread64".into()),
                ("nr".into(), "17".into()),
            ],
            fields: vec![
                field("pid", 0, FieldType::U32),
                field("start_us", 8, FieldType::U64),
                field("duration_us", 16, FieldType::U64),
            ],
            index: Some(IndexDef {
                field: "duration_us".into(),
                min: 0,
                interval: 10,
                n_bins: 40,
            }),
        },
        SourceSchema {
            measurement: "pagecache".into(),
            tags: vec![],
            fields: vec![
                field("pfn", 0, FieldType::U64),
                field("inode", 8, FieldType::U64),
            ],
            index: None,
        },
    ]
}

fn config() -> Config {
    Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Direct,
        sync_data: false,
        max_index_lag: 16,
        sync_interval_ms: 1000,
        ..Config::default()
    }
}

#[derive(Debug, Clone)]
struct Rec {
    source: usize,
    ts: u64,
    bytes: Vec<u8>,
}

fn record(a: u64, b: u64, c: u64) -> Vec<u8> {
    let mut v = vec![0u8; 24];
    v[0..8].copy_from_slice(&a.to_le_bytes());
    v[8..16].copy_from_slice(&b.to_le_bytes());
    v[16..24].copy_from_slice(&c.to_le_bytes());
    v
}

fn value_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..60, 4 => 60u64..450, 1 => 450u64..5000]
}

fn records() -> impl Strategy<Value = Vec<(usize, u64, u64, u64, bool)>> {
    prop::collection::vec(
        (
            0usize..4,
            prop_oneof![6 => 0u64..3, 3 => 3u64..200, 1 => 1000u64..5000],
            0u64..8,
            value_strategy(),
            prop::bool::weighted(0.01),
        ),
        0..1500,
    )
}

/// The parts a statement is made of; the text is rendered from them.
#[derive(Debug, Clone)]
struct Stmt {
    measurement: usize,
    op_filter: Option<(bool, bool)>,
    field_filter: Option<(usize, usize, u64)>,
    lo: Option<(u64, u8)>,
    hi: Option<(u64, u8)>,
    kind: Kind,
    group_op: bool,
    desc: bool,
    limit: Option<u64>,
}

#[derive(Debug, Clone)]
enum Kind {
    Aggregate {
        calls: Vec<(usize, usize)>,
        interval: Option<(u64, bool)>,
    },
    Raw {
        fields: Option<Vec<usize>>,
    },
    Top {
        field: usize,
        n: u64,
    },
}

const FUNCS: &[&str] = &["count", "sum", "min", "max", "mean", "percentile"];
const PCTS: &[f64] = &[0.0, 1.0, 33.3, 50.0, 90.0, 99.0, 99.99, 100.0];
const OPS: &[&str] = &["=", "!=", "<", "<=", ">", ">="];

fn measurement_name(m: usize) -> &'static str {
    ["kv", "syscall", "pagecache"][m]
}

fn fields_of(m: usize) -> Vec<&'static str> {
    match m {
        0 => vec!["thread_id", "start_us", "duration_us"],
        1 => vec!["pid", "start_us", "duration_us"],
        _ => vec!["pfn", "inode"],
    }
}

fn stmt_strategy() -> impl Strategy<Value = Stmt> {
    let kind = prop_oneof![
        3 => (
            prop::collection::vec((0usize..6, 0usize..PCTS.len() * 3), 1..4),
            prop::option::weighted(0.4, (prop_oneof![Just(50u64), Just(700), Just(9000)], any::<bool>())),
        )
            .prop_map(|(calls, interval)| Kind::Aggregate { calls, interval }),
        2 => prop::option::of(prop::collection::vec(0usize..3, 1..3))
            .prop_map(|fields| Kind::Raw { fields }),
        1 => (0usize..3, prop_oneof![1u64..5, 5u64..200]).prop_map(|(field, n)| Kind::Top { field, n }),
    ];
    (
        0usize..3,
        prop::option::of((any::<bool>(), any::<bool>())),
        prop::option::weighted(0.4, (0usize..3, 0usize..6, value_strategy())),
        prop::option::weighted(0.8, (0u64..140_000, 0u8..5)),
        prop::option::weighted(0.8, (0u64..140_000, 0u8..5)),
        kind,
        any::<bool>(),
        any::<bool>(),
        prop::option::weighted(0.5, 0u64..20),
    )
        .prop_map(
            |(measurement, op_filter, field_filter, lo, hi, kind, group_op, desc, limit)| Stmt {
                measurement,
                op_filter,
                field_filter,
                lo,
                hi,
                kind,
                group_op,
                desc,
                limit,
            },
        )
}

impl Stmt {
    fn has_op(&self) -> bool {
        self.measurement == 0
    }

    /// Bounds in ns as the statement states them (µs value, rendering form).
    fn bounds(&self) -> (Option<i128>, Option<i128>) {
        let lo = self.lo.map(|(us, form)| {
            let ns = i128::from(us) * 1000;
            if form == 4 {
                ns + 1
            } else {
                ns
            }
        });
        let hi = self.hi.map(|(us, form)| {
            let ns = i128::from(us) * 1000;
            if form == 4 {
                ns + 999
            } else {
                ns
            }
        });
        (lo, hi)
    }

    fn needs_bounds(&self) -> bool {
        matches!(
            self.kind,
            Kind::Aggregate {
                interval: Some(_),
                ..
            }
        )
    }

    fn text(&self) -> String {
        let m = self.measurement;
        let fields = fields_of(m);
        let mut s = String::from("SELECT ");
        match &self.kind {
            Kind::Aggregate { calls, .. } => {
                let c: Vec<String> = calls
                    .iter()
                    .map(|&(f, x)| {
                        let fld = fields[x % fields.len()];
                        if FUNCS[f] == "percentile" {
                            format!("percentile({fld}, {})", PCTS[x % PCTS.len()])
                        } else {
                            format!("{}({fld})", FUNCS[f])
                        }
                    })
                    .collect();
                s += &c.join(", ");
            }
            Kind::Raw { fields: None } => s += "*",
            Kind::Top { field, n } => {
                s += &format!("top({}, {n})", fields[field % fields.len()]);
            }
            Kind::Raw { fields: Some(fs) } => {
                let c: Vec<&str> = fs.iter().map(|&k| fields[k % fields.len()]).collect();
                s += &c.join(", ");
            }
        }
        s += &format!(" FROM {}", measurement_name(m));
        let mut conds = Vec::new();
        if let (Some((eq, read)), true) = (self.op_filter, self.has_op()) {
            conds.push(format!(
                "op {} '{}'",
                if eq { "=" } else { "!=" },
                if read { "read" } else { "write" }
            ));
        }
        if let Some((f, op, v)) = self.field_filter {
            conds.push(format!("{} {} {v}", fields[f % fields.len()], OPS[op]));
        }
        let (lo, hi) = self.bounds();
        if let (Some(ns), Some((us, form))) = (lo, self.lo) {
            conds.push(match form {
                0 => format!("time >= {ns}"),
                1 => format!("time > {}", ns - 1),
                2 => format!("time >= '{}'", rfc3339(ns)),
                3 => format!("time >= {us}u"),
                _ => format!("{ns} <= time"),
            });
        }
        if let (Some(ns), Some((us, form))) = (hi, self.hi) {
            conds.push(match form {
                0 => format!("time <= {ns}"),
                1 => format!("time < {}", ns + 1),
                2 => format!("time <= '{}'", rfc3339(ns)),
                3 => format!("time <= {us}u"),
                _ => format!("time <= {ns}"),
            });
        }
        if !conds.is_empty() {
            s += " WHERE ";
            s += &conds.join(" AND ");
        }
        let mut dims = Vec::new();
        if let Kind::Aggregate {
            interval: Some((iv, _)),
            ..
        } = &self.kind
        {
            dims.push(format!("time({iv}u)"));
        }
        if self.group_op && self.has_op() {
            dims.push("op".into());
        }
        if !dims.is_empty() {
            s += " GROUP BY ";
            s += &dims.join(", ");
        }
        if let Kind::Aggregate {
            interval: Some((_, none)),
            ..
        } = &self.kind
        {
            s += if *none { " fill(none)" } else { " fill(null)" };
        }
        if self.desc {
            s += " ORDER BY time DESC";
        }
        if let Some(n) = self.limit {
            s += &format!(" LIMIT {n}");
        }
        s
    }
}

fn value_of(schema: &SourceSchema, name: &str, bytes: &[u8]) -> u64 {
    match schema.field(name).and_then(|f| f.read(bytes)) {
        Some(loom::Value::Unsigned(v)) => v,
        other => panic!("field {name}: {other:?}"),
    }
}

fn holds(v: u64, op: &str, c: u64) -> bool {
    match op {
        "=" => v == c,
        "!=" => v != c,
        "<" => v < c,
        "<=" => v <= c,
        ">" => v > c,
        _ => v >= c,
    }
}

/// What the statement must return, from the records alone.
fn expected(st: &Stmt, recs: &[Rec], schemas: &[SourceSchema]) -> Vec<SeriesResult> {
    let m = measurement_name(st.measurement);
    let fields = fields_of(st.measurement);
    let (lo, hi) = st.bounds();
    // Series of the measurement in tag order, filtered by the op predicate.
    let mut series: Vec<usize> = (0..schemas.len())
        .filter(|&i| schemas[i].measurement == m)
        .filter(|&i| match (st.op_filter, st.has_op()) {
            (Some((eq, read)), true) => {
                (schemas[i].tag("op") == Some(if read { "read" } else { "write" })) == eq
            }
            _ => true,
        })
        .collect();
    series.sort_by(|a, b| schemas[*a].tags.cmp(&schemas[*b].tags));
    let grouped = st.group_op && st.has_op();
    let mut groups: BTreeMap<Vec<(String, String)>, Vec<usize>> = BTreeMap::new();
    for &i in &series {
        let key = if grouped {
            vec![(
                "op".to_string(),
                schemas[i].tag("op").unwrap_or("").to_string(),
            )]
        } else {
            vec![]
        };
        groups.entry(key).or_default().push(i);
    }
    let in_window = |ts: u64| {
        let ns = i128::from(ts) * 1000;
        lo.is_none_or(|l| ns >= l) && hi.is_none_or(|h| ns <= h)
    };
    let mut out = Vec::new();
    for (tags, members) in groups {
        // (ts, position of series in group, bytes, schema)
        let mut rows: Vec<(u64, usize, &[u8], &SourceSchema)> = Vec::new();
        for (pos, &i) in members.iter().enumerate() {
            for r in recs.iter().filter(|r| r.source == i && in_window(r.ts)) {
                if let Some((f, op, c)) = st.field_filter {
                    if !holds(
                        value_of(&schemas[i], fields[f % fields.len()], &r.bytes),
                        OPS[op],
                        c,
                    ) {
                        continue;
                    }
                }
                rows.push((r.ts, pos, &r.bytes, &schemas[i]));
            }
        }
        rows.sort_by_key(|r| (r.0, r.1));
        let mut values: Vec<Vec<Cell>> = Vec::new();
        let columns: Vec<String>;
        match &st.kind {
            Kind::Raw { fields: sel } => {
                let mut cols: Vec<(String, bool)> = match sel {
                    None => {
                        let mut c: Vec<(String, bool)> =
                            fields.iter().map(|f| (f.to_string(), true)).collect();
                        let mut keys: Vec<String> = schemas
                            .iter()
                            .filter(|s| s.measurement == m)
                            .flat_map(|s| s.tags.iter().map(|t| t.0.clone()))
                            .filter(|k| !(grouped && k == "op"))
                            .collect();
                        keys.sort();
                        keys.dedup();
                        c.extend(keys.into_iter().map(|k| (k, false)));
                        c.sort();
                        c
                    }
                    Some(fs) => fs
                        .iter()
                        .map(|&k| (fields[k % fields.len()].to_string(), true))
                        .collect(),
                };
                let mut seen: BTreeMap<String, u32> = BTreeMap::new();
                for c in cols.iter_mut() {
                    let n = seen.entry(c.0.clone()).or_insert(0);
                    if *n > 0 {
                        c.0 = format!("{}_{}", c.0, n);
                    }
                    *n += 1;
                }
                let srcs: Vec<String> = match sel {
                    None => cols.iter().map(|c| c.0.clone()).collect(),
                    Some(fs) => fs
                        .iter()
                        .map(|&k| fields[k % fields.len()].to_string())
                        .collect(),
                };
                columns = std::iter::once("time".to_string())
                    .chain(cols.iter().map(|c| c.0.clone()))
                    .collect();
                for (ts, _, bytes, schema) in &rows {
                    let mut row = vec![Cell::Time(i128::from(*ts) * 1000)];
                    for (c, src) in cols.iter().zip(&srcs) {
                        row.push(if c.1 {
                            Cell::UInt(value_of(schema, src, bytes))
                        } else {
                            Cell::Str(schema.tag(src).unwrap_or("").to_string())
                        });
                    }
                    values.push(row);
                }
            }
            Kind::Top { field, n } => {
                let fld = fields[field % fields.len()];
                columns = vec!["time".to_string(), "top".to_string()];
                let mut pts: Vec<(u64, u64, usize)> = rows
                    .iter()
                    .map(|r| (value_of(r.3, fld, r.2), r.0, r.1))
                    .collect();
                pts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
                pts.truncate(*n as usize);
                pts.sort_by_key(|p| (p.1, p.2));
                values = pts
                    .into_iter()
                    .map(|p| vec![Cell::Time(i128::from(p.1) * 1000), Cell::UInt(p.0)])
                    .collect();
            }
            Kind::Aggregate { calls, interval } => {
                let mut names: Vec<String> = Vec::new();
                let mut seen: BTreeMap<String, u32> = BTreeMap::new();
                for &(f, _) in calls {
                    let n = seen.entry(FUNCS[f].to_string()).or_insert(0);
                    names.push(if *n == 0 {
                        FUNCS[f].to_string()
                    } else {
                        format!("{}_{}", FUNCS[f], n)
                    });
                    *n += 1;
                }
                columns = std::iter::once("time".to_string()).chain(names).collect();
                let eval =
                    |pts: &[&(u64, usize, &[u8], &SourceSchema)]| -> Vec<(Cell, Option<u64>)> {
                        calls
                            .iter()
                            .map(|&(f, x)| {
                                let fld = fields[x % fields.len()];
                                let mut vs: Vec<(u64, u64)> =
                                    pts.iter().map(|p| (value_of(p.3, fld, p.2), p.0)).collect();
                                let n = vs.len() as u64;
                                let sum: u128 = vs.iter().map(|v| u128::from(v.0)).sum();
                                vs.sort();
                                match FUNCS[f] {
                                    "count" => (Cell::UInt(n), None),
                                    _ if n == 0 => (Cell::Null, None),
                                    "sum" => (Cell::UInt(sum as u64), None),
                                    "mean" => (Cell::Float(sum as f64 / n as f64), None),
                                    "min" => (Cell::UInt(vs[0].0), Some(vs[0].1)),
                                    "max" => {
                                        let mx = vs[vs.len() - 1].0;
                                        let t = vs.iter().find(|v| v.0 == mx).map(|v| v.1);
                                        (Cell::UInt(mx), t)
                                    }
                                    _ => {
                                        let p = PCTS[x % PCTS.len()];
                                        let k = ((n as f64) * p / 100.0 + 0.5).floor();
                                        if k < 1.0 || k > n as f64 {
                                            (Cell::Null, None)
                                        } else {
                                            let v = vs[k as usize - 1].0;
                                            let t = vs.iter().find(|e| e.0 == v).map(|e| e.1);
                                            (Cell::UInt(v), t)
                                        }
                                    }
                                }
                            })
                            .collect()
                    };
                match interval {
                    None => {
                        let pts: Vec<_> = rows.iter().collect();
                        if !pts.is_empty() {
                            let cells = eval(&pts);
                            let selector = calls.len() == 1
                                && matches!(FUNCS[calls[0].0], "min" | "max" | "percentile");
                            let time = if selector {
                                cells[0].1.map(|t| i128::from(t) * 1000)
                            } else {
                                Some(lo.unwrap_or(0))
                            };
                            if let Some(t) = time {
                                let mut row = vec![Cell::Time(t)];
                                row.extend(cells.into_iter().map(|c| c.0));
                                values.push(row);
                            }
                        }
                    }
                    Some((iv, fill_none)) => {
                        let (Some(lo), Some(hi)) = (lo, hi) else {
                            unreachable!()
                        };
                        let t0 = (lo + 999).div_euclid(1000).max(0) as u64;
                        let t1 = hi.div_euclid(1000);
                        if t1 >= 0 && t0 as i128 <= t1 {
                            let t1 = t1 as u64;
                            let mut b = t0 - t0 % iv;
                            let mut any = false;
                            while b <= t1 {
                                let pts: Vec<_> =
                                    rows.iter().filter(|r| r.0 >= b && r.0 < b + iv).collect();
                                let mut row = vec![Cell::Time(i128::from(b) * 1000)];
                                if !pts.is_empty() {
                                    any = true;
                                    row.extend(eval(&pts).into_iter().map(|c| c.0));
                                    values.push(row);
                                } else if !fill_none {
                                    row.extend(calls.iter().map(|&(f, _)| {
                                        if FUNCS[f] == "count" {
                                            Cell::UInt(0)
                                        } else {
                                            Cell::Null
                                        }
                                    }));
                                    values.push(row);
                                }
                                b += iv;
                            }
                            if !any {
                                values.clear();
                            }
                        }
                    }
                }
            }
        }
        if st.desc {
            values.reverse();
        }
        if let Some(n) = st.limit {
            values.truncate(n as usize);
        }
        if !values.is_empty() {
            out.push(SeriesResult {
                name: m.to_string(),
                tags,
                columns,
                values,
            });
        }
    }
    out
}

fn build(
    raw: &[(usize, u64, u64, u64, bool)],
) -> (tempfile::TempDir, loom::Writer, Reader, Vec<Rec>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut w, r) = loom::open(dir.path(), config()).expect("open");
    let schemas = schemas();
    let handles: Vec<_> = schemas
        .iter()
        .enumerate()
        .map(|(i, s)| {
            w.declare(SourceId(100 + i as u64), s.clone())
                .expect("declare")
        })
        .collect();
    let mut ts = 0u64;
    let mut recs = Vec::new();
    for &(source, dt, a, v, persist) in raw {
        ts += dt;
        let bytes = record(a, ts / 2, v);
        w.push(handles[source], ts, &bytes).expect("push");
        recs.push(Rec { source, ts, bytes });
        if persist {
            w.persist().expect("persist");
        }
    }
    w.sync();
    w.wait_for_index().expect("index");
    w.sync();
    (dir, w, r, recs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn statements_match_brute_force(
        raw in records(),
        stmts in prop::collection::vec(stmt_strategy(), 12),
    ) {
        let (_dir, _w, reader, recs) = build(&raw);
        let schemas = schemas();
        let snap = reader.snapshot();
        let top = recs.last().map_or(0, |r| r.ts);
        for mut st in stmts {
            // Keep windows near the data: some inside, some beyond it.
            if let Some((us, f)) = st.lo { st.lo = Some((us % (top + 3000), f)); }
            if let Some((us, f)) = st.hi { st.hi = Some((us % (top + 3000), f)); }
            if st.needs_bounds() {
                let l = st.lo.map_or(0, |x| x.0);
                st.lo = Some((l, st.lo.map_or(0, |x| x.1)));
                let h = st.hi.map_or(top, |x| x.0).max(l);
                // Bound the bucket count.
                let h = h.min(l + 300 * 50);
                st.hi = Some((h, st.hi.map_or(0, |x| x.1) % 4));
            }
            let text = st.text();
            let got = influxql::run(&snap, &text, 0, &Limits::default());
            let got = match got {
                Ok(mut v) => v.remove(0),
                Err(e) => return Err(TestCaseError::fail(format!("{text}: {e}"))),
            };
            let got = got.map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            let want = expected(&st, &recs, &schemas);
            prop_assert_eq!(&got.series, &want, "{}", text);
        }
    }
}
