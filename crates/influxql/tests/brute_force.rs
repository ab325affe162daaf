//! Random records in several series, random statements of the subset:
//! every answer equals brute force over the same records, computed here
//! independently from the statement's parts (not from its text).
//! Windows fall in memory, on disk, across both and beyond the data.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;

use influxql::rfc3339;
use influxql::{Cell, Limits, SeriesResult};
use loom::{Config, FieldDef, FieldType, FlushMode, IndexDef, Reader, SourceId, SourceSchema};
use proptest::prelude::*;

/// The brute-force answer of a statement over the records.
#[path = "support/brute_force_oracle.rs"]
mod oracle;
use oracle::expected;

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
            let want = expected(&st, &recs, &schemas);
            // On the statement's thread alone, and with `GROUP BY time`
            // buckets spread over helpers (up to 300 buckets here).
            for threads in [1, 3] {
                let limits = Limits { threads, ..Limits::default() };
                let got = influxql::run(&snap, &text, 0, &limits);
                let got = match got {
                    Ok(mut v) => v.remove(0),
                    Err(e) => return Err(TestCaseError::fail(format!("{text}: {e}"))),
                };
                let got = got.map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(&got.series, &want, "{} ({} threads)", text, threads);
            }
        }
    }
}
