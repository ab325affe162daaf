//! Query results as people and scripts read them, like `loom query`:
//! aligned table, CSV (one header line) or JSON (an array of objects,
//! numbers as numbers).

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

/// Column names and cells (`None`: null) of `batches`.
pub fn cells(batches: &[RecordBatch]) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    let Some(first) = batches.first() else {
        return (Vec::new(), Vec::new());
    };
    let names = first
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let opts = FormatOptions::default();
    let mut rows = Vec::new();
    for b in batches {
        let fmts: Vec<_> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).ok())
            .collect();
        for i in 0..b.num_rows() {
            rows.push(
                b.columns()
                    .iter()
                    .zip(&fmts)
                    .map(|(c, f)| {
                        if c.is_null(i) {
                            None
                        } else {
                            f.as_ref().map(|f| f.value(i).to_string())
                        }
                    })
                    .collect(),
            );
        }
    }
    (names, rows)
}

/// Aligned columns with a header and a dashed rule.
pub fn table(batches: &[RecordBatch]) -> String {
    let (names, rows) = cells(batches);
    let mut width: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.as_deref().unwrap_or("").chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(names.iter().map(String::as_str).collect());
    out += &line(
        width
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect(),
    );
    for r in &rows {
        out += &line(r.iter().map(|c| c.as_deref().unwrap_or("")).collect());
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: a header line, then one line per row; null is an empty field.
pub fn csv(batches: &[RecordBatch]) -> String {
    let (names, rows) = cells(batches);
    let mut out = names
        .iter()
        .map(|n| csv_field(n))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    for r in rows {
        out += &(r
            .iter()
            .map(|c| csv_field(c.as_deref().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(",")
            + "\n");
    }
    out
}

/// JSON: an array of objects; numeric columns as numbers, null as null.
pub fn json(batches: &[RecordBatch]) -> serde_json::Value {
    let (names, rows) = cells(batches);
    let numeric: Vec<bool> = batches.first().map_or_else(Vec::new, |b| {
        b.schema()
            .fields()
            .iter()
            .map(|f| f.data_type().is_numeric() && *f.data_type() != DataType::Float16)
            .collect()
    });
    let arr = rows
        .into_iter()
        .map(|r| {
            let obj: serde_json::Map<String, serde_json::Value> = names
                .iter()
                .zip(r)
                .zip(&numeric)
                .map(|((n, c), num)| {
                    let v = match c {
                        None => serde_json::Value::Null,
                        Some(s) if *num => serde_json::from_str::<serde_json::Value>(&s)
                            .ok()
                            .filter(serde_json::Value::is_number)
                            .unwrap_or(serde_json::Value::String(s)),
                        Some(s) => serde_json::Value::String(s),
                    };
                    (n.clone(), v)
                })
                .collect();
            serde_json::Value::Object(obj)
        })
        .collect();
    serde_json::Value::Array(arr)
}
