//! Shared by the export tests: stores in the data model's shapes, records
//! kept aside for brute force, and reading every exported file back.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::{Array, RecordBatch};
use loom::{FieldDef, FieldType, IndexDef, RecordBuilder, SourceId, SourceSchema, Writer};

/// One record as a test expects to find it in Parquet.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub struct Row {
    pub measurement: String,
    pub host: String,
    pub tags: Vec<(String, String)>,
    pub time: i64,
    pub fields: Vec<(String, String)>,
}

fn field(name: &str, offset: u32, ty: FieldType) -> FieldDef {
    FieldDef {
        name: name.to_string().into(),
        offset,
        ty,
    }
}

/// The `syscall` schema of the data model, with an optional `host` tag.
pub fn syscall(nr: u32, name: &str, host: Option<&str>) -> SourceSchema {
    let mut tags = vec![
        ("nr".to_string(), nr.to_string()),
        ("name".into(), name.into()),
    ];
    if let Some(h) = host {
        tags.push(("host".into(), h.into()));
    }
    SourceSchema {
        measurement: "syscall".into(),
        tags,
        fields: vec![
            field("pid", 0, FieldType::U32),
            field("tid", 4, FieldType::U32),
            field("start_us", 8, FieldType::U64),
            field("duration_us", 16, FieldType::U64),
        ],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 1000,
        }),
    }
    .validated()
    .expect("schema")
}

/// A `log` measurement with a signed, a float and a string field.
pub fn log_schema(service: &str) -> SourceSchema {
    SourceSchema {
        measurement: "log".into(),
        tags: vec![("service".into(), service.into())],
        fields: vec![
            field("delta", 0, FieldType::I64),
            field("ratio", 8, FieldType::F64),
            field("msg", 16, FieldType::String),
            field("level", 24, FieldType::U8),
        ],
        index: None,
    }
}

/// Pushes records and remembers each as a [`Row`].
pub struct Feeder {
    pub rows: Vec<Row>,
    pub default_host: String,
    b: RecordBuilder,
}

impl Feeder {
    pub fn new(default_host: &str) -> Feeder {
        Feeder {
            rows: Vec::new(),
            default_host: default_host.into(),
            b: RecordBuilder::new(),
        }
    }

    fn row(&self, s: &SourceSchema, ts: u64, fields: Vec<(String, String)>) -> Row {
        Row {
            measurement: s.measurement.clone(),
            host: s.tag("host").unwrap_or(&self.default_host).to_string(),
            tags: s
                .tags
                .iter()
                .filter(|(k, _)| k != "host")
                .cloned()
                .collect(),
            time: ts as i64,
            fields,
        }
    }

    /// A syscall record (`seed` makes the fields).
    pub fn syscall(&mut self, w: &mut Writer, id: u64, s: &SourceSchema, ts: u64, seed: u64) {
        let h = w.declare(SourceId(id), s.clone()).expect("declare");
        self.b.start(24);
        let (pid, tid, dur) = ((seed % 7) as u32, (seed % 13) as u32, seed * 37 % 5000);
        self.b.u32(0, pid);
        self.b.u32(4, tid);
        self.b.u64(8, ts - dur);
        self.b.u64(16, dur);
        w.push(h, ts, self.b.bytes()).expect("push");
        let f = vec![
            ("pid".into(), pid.to_string()),
            ("tid".into(), tid.to_string()),
            ("start_us".into(), (ts - dur).to_string()),
            ("duration_us".into(), dur.to_string()),
        ];
        let r = self.row(s, ts, f);
        self.rows.push(r);
    }

    /// A log record.
    pub fn log(&mut self, w: &mut Writer, id: u64, s: &SourceSchema, ts: u64, seed: u64) {
        let h = w.declare(SourceId(id), s.clone()).expect("declare");
        self.b.start(25);
        let delta = seed as i64 - 500;
        let ratio = seed as f64 / 8.0;
        let msg = format!("message {seed} ✓");
        self.b.i64(0, delta);
        self.b.f64(8, ratio);
        self.b.str(16, &msg);
        self.b.u8(24, (seed % 5) as u8);
        w.push(h, ts, self.b.bytes()).expect("push");
        let f = vec![
            ("delta".into(), delta.to_string()),
            ("ratio".into(), format!("{ratio:?}")),
            ("msg".into(), msg),
            ("level".into(), (seed % 5).to_string()),
        ];
        let r = self.row(s, ts, f);
        self.rows.push(r);
    }
}

/// Every `.parquet` file under `root`, sorted.
pub fn parquet_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Hive partition values of a file's path (`key=value` segments).
pub fn partitions(root: &Path, file: &Path) -> BTreeMap<String, String> {
    file.strip_prefix(root)
        .expect("under root")
        .iter()
        .filter_map(|s| {
            s.to_str()?
                .split_once('=')
                .map(|(k, v)| (k.into(), v.into()))
        })
        .collect()
}

fn cell(a: &dyn Array, i: usize) -> Option<String> {
    if a.is_null(i) {
        return None;
    }
    let opts = arrow::util::display::FormatOptions::default();
    let f = arrow::util::display::ArrayFormatter::try_new(a, &opts).expect("formatter");
    Some(f.value(i).to_string())
}

/// Reads every exported file back as rows (partition values from the path),
/// checking on the way that each file is sorted by series then time.
pub fn read_back(root: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    for file in parquet_files(root) {
        let parts = partitions(root, &file);
        let f = std::fs::File::open(&file).expect("open");
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .expect("parquet")
            .build()
            .expect("reader");
        let mut file_rows: Vec<Row> = Vec::new();
        for batch in reader {
            let batch: RecordBatch = batch.expect("batch");
            let schema = batch.schema();
            let time = batch
                .column_by_name("time")
                .expect("time column")
                .as_any()
                .downcast_ref::<arrow_array::TimestampMicrosecondArray>()
                .expect("time is a µs timestamp")
                .clone();
            for i in 0..batch.num_rows() {
                let mut tags = Vec::new();
                let mut fields = Vec::new();
                for (c, fld) in schema.fields().iter().enumerate() {
                    let name = fld.name();
                    if name == "time" {
                        continue;
                    }
                    let Some(v) = cell(batch.column(c).as_ref(), i) else {
                        continue;
                    };
                    if matches!(fld.data_type(), arrow_schema::DataType::Dictionary(..)) {
                        tags.push((name.clone(), v));
                    } else {
                        fields.push((name.clone(), v));
                    }
                }
                tags.sort();
                file_rows.push(Row {
                    measurement: parts["measurement"].clone(),
                    host: parts["host"].clone(),
                    tags,
                    time: time.value(i),
                    fields,
                });
            }
        }
        for w in file_rows.windows(2) {
            assert!(
                (&w[0].tags, w[0].time) <= (&w[1].tags, w[1].time),
                "{}: rows not sorted by series then time",
                file.display()
            );
        }
        rows.extend(file_rows);
    }
    rows
}

/// Rows in one canonical order (for comparing sets with duplicates).
pub fn canonical(mut rows: Vec<Row>) -> Vec<Row> {
    for r in &mut rows {
        r.tags.sort();
        r.fields.sort();
    }
    rows.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    rows
}
