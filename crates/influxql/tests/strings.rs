//! String fields (text stored after a record's fixed part): raw selects
//! return them, `=`/`!=` filter on them, `count()` counts them, other
//! functions refuse them by name; answers equal brute force over the
//! records written.

use influxql::{run, Cell, Limits, StatementResult};
use loom::{Config, FieldDef, FieldType, IndexDef, RecordBuilder, SourceId, SourceSchema};

fn field(name: &str, offset: u32, ty: FieldType) -> FieldDef {
    FieldDef {
        name: name.to_string().into(),
        offset,
        ty,
    }
}

fn schema(service: &str) -> SourceSchema {
    SourceSchema {
        measurement: "span".into(),
        tags: vec![("service".into(), service.into())],
        fields: vec![
            field("duration_us", 0, FieldType::U64),
            field("trace_id", 8, FieldType::String),
            field("attributes", 16, FieldType::String),
        ],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 100,
        }),
    }
}

/// (service, time µs, duration, trace id, attributes) of every record.
type Rec = (&'static str, u64, u64, String, String);

fn records() -> Vec<Rec> {
    let mut v = Vec::new();
    for i in 0..300u64 {
        let service = if i % 3 == 0 { "db" } else { "web" };
        let trace = format!("{:032x}", i % 7);
        // Quotes, backslashes, non-ASCII and empty text come back unchanged.
        let attrs = match i % 4 {
            0 => String::new(),
            1 => format!("{{\"n\":{i},\"q\":\"a\\\"b\"}}"),
            2 => format!("é—{i}\\"),
            _ => "x".repeat(i as usize),
        };
        v.push((service, 1_000_000 + i * 1_000, (i * 37) % 500, trace, attrs));
    }
    v
}

fn store(recs: &[Rec]) -> (tempfile::TempDir, loom::Writer, loom::Reader) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut w, r) = loom::open(dir.path(), Config::default()).expect("open");
    let db = w.declare(SourceId(1), schema("db")).expect("declare");
    let web = w.declare(SourceId(2), schema("web")).expect("declare");
    let mut b = RecordBuilder::new();
    for (service, ts, d, trace, attrs) in recs {
        b.start(24);
        b.u64(0, *d);
        b.str(8, trace);
        b.str(16, attrs);
        let h = if *service == "db" { db } else { web };
        w.push(h, *ts, b.bytes()).expect("push");
    }
    w.sync();
    (dir, w, r)
}

fn ask(r: &loom::Reader, q: &str) -> influxql::Result<StatementResult> {
    let mut out = run(&r.snapshot(), q, 0, &Limits::default())?;
    out.remove(0)
}

fn rows(res: &StatementResult) -> Vec<Vec<Cell>> {
    res.series.iter().flat_map(|s| s.values.clone()).collect()
}

#[test]
fn raw_selects_return_strings_and_filter_on_them() {
    let recs = records();
    let (_d, _w, r) = store(&recs);

    let got = ask(
        &r,
        "SELECT trace_id, attributes, duration_us FROM span WHERE service = 'web'",
    )
    .expect("raw select");
    let want: Vec<Vec<Cell>> = recs
        .iter()
        .filter(|x| x.0 == "web")
        .map(|x| {
            vec![
                Cell::Time(i128::from(x.1) * 1000),
                Cell::Str(x.3.clone()),
                Cell::Str(x.4.clone()),
                Cell::UInt(x.2),
            ]
        })
        .collect();
    assert_eq!(rows(&got), want);

    let trace = format!("{:032x}", 3);
    let got = ask(
        &r,
        &format!("SELECT duration_us FROM span WHERE trace_id = '{trace}' AND duration_us > 100"),
    )
    .expect("string predicate");
    let mut want: Vec<(u64, u64)> = recs
        .iter()
        .filter(|x| x.3 == trace && x.2 > 100)
        .map(|x| (x.1, x.2))
        .collect();
    want.sort_unstable();
    let want: Vec<Vec<Cell>> = want
        .into_iter()
        .map(|(t, d)| vec![Cell::Time(i128::from(t) * 1000), Cell::UInt(d)])
        .collect();
    assert!(!want.is_empty());
    assert_eq!(rows(&got), want);

    let got = ask(
        &r,
        &format!(
            "SELECT count(trace_id), count(duration_us) FROM span WHERE trace_id != '{trace}'"
        ),
    )
    .expect("count of a string field");
    let n = recs.iter().filter(|x| x.3 != trace).count() as u64;
    assert_eq!(
        rows(&got),
        vec![vec![Cell::Time(0), Cell::UInt(n), Cell::UInt(n)]]
    );
    let got = ask(&r, "SELECT count(attributes) FROM span").expect("count, index path");
    assert_eq!(
        rows(&got),
        vec![vec![Cell::Time(0), Cell::UInt(recs.len() as u64)]]
    );

    // SELECT * shows string fields beside numbers and tags.
    let got = ask(&r, "SELECT * FROM span WHERE service = 'db' LIMIT 1").expect("select *");
    assert_eq!(
        got.series[0].columns,
        vec!["time", "attributes", "duration_us", "service", "trace_id"]
    );
    let first = &recs[0];
    assert_eq!(
        rows(&got),
        vec![vec![
            Cell::Time(i128::from(first.1) * 1000),
            Cell::Str(first.4.clone()),
            Cell::UInt(first.2),
            Cell::Str("db".into()),
            Cell::Str(first.3.clone()),
        ]]
    );
    let got = ask(&r, "SHOW FIELD KEYS FROM span").expect("show field keys");
    assert!(rows(&got).contains(&vec![
        Cell::Str("trace_id".into()),
        Cell::Str("string".into())
    ]));
}

#[test]
fn numeric_functions_and_comparisons_refuse_strings_by_name() {
    let (_d, _w, r) = store(&records());
    for (q, want) in [
        (
            "SELECT percentile(trace_id, 99) FROM span",
            "trace_id is a string field",
        ),
        ("SELECT max(attributes) FROM span", "string field"),
        ("SELECT top(trace_id, 3) FROM span", "string field"),
        (
            "SELECT duration_us FROM span WHERE trace_id = 5",
            "compare it with a string",
        ),
        (
            "SELECT duration_us FROM span WHERE trace_id > 'a'",
            "ordering comparisons on string field",
        ),
        (
            "SELECT duration_us FROM span WHERE duration_us = 'a'",
            "other than a number",
        ),
    ] {
        let e = match run(&r.snapshot(), q, 0, &Limits::default()) {
            Err(e) => e.to_string(),
            Ok(mut v) => match v.remove(0) {
                Err(e) => e.to_string(),
                Ok(res) => panic!("{q} answered {res:?}"),
            },
        };
        assert!(e.contains(want), "{q}: {e}");
    }
}
