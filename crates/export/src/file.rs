//! One Parquet file: the rows of several series of one measurement, host and
//! hour, sorted by series (tag values) then time, as an Arrow batch encoded
//! with zstd and row-group statistics.
//!
//! Columns: `time` (timestamp µs, UTC), every tag but `host` as a
//! dictionary-encoded string (null where a series lacks the tag), then the
//! fields, typed as stored. `time` and 64-bit integer fields are
//! DELTA_BINARY_PACKED and 64-bit floats plain, without dictionaries (their
//! values are nearly all distinct); narrower fields and strings keep the
//! writer's dictionary. A field name that two series of the measurement
//! give different types gets the later type's column `<name>_<type>`.
//! `measurement`, `host`, `date` and `hour` are the hive partition columns
//! of the file's path, not stored inside it.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use loom::FieldType;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding as ColumnEncoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::error::{Error, Result};
use crate::series::{Series, Values};

/// Rows of one series that go into a file: `series[idx].rows[a..b]`.
pub(crate) struct Slice {
    pub idx: usize,
    pub a: usize,
    pub b: usize,
}

/// How Parquet files are encoded.
#[derive(Debug, Clone, Copy)]
pub struct Encoding {
    /// zstd level (1: fast, what keeps up with ingest).
    pub zstd_level: i32,
    /// Rows per row group (each with its own min/max statistics).
    pub row_group_rows: usize,
    /// Min/max statistics per page as well as per row group (engines
    /// prune by row group either way; pages let them skip within one).
    pub page_statistics: bool,
    /// Rows the Parquet writer encodes at a time.
    pub write_batch_rows: usize,
    /// `time` as DELTA_BINARY_PACKED without a dictionary: times are
    /// nearly all distinct, so a dictionary is built only to be dropped
    /// when it outgrows its page, and their deltas are small.
    pub time_delta: bool,
    /// 64-bit fields (durations, start times: mostly distinct too) without
    /// a dictionary; integers as DELTA_BINARY_PACKED, floats plain.
    pub wide_fields_plain: bool,
}

impl Default for Encoding {
    fn default() -> Self {
        Encoding {
            zstd_level: 1,
            row_group_rows: 1 << 20,
            page_statistics: true,
            write_batch_rows: 1024,
            // Measured with `export-bench --compare` (10 M syscall
            // records, 2 rounds): 5.63-5.80 M records per CPU-second and
            // 4.76 B/record with both, 4.17-4.57 M and 6.08 B without.
            time_delta: true,
            wide_fields_plain: true,
        }
    }
}

fn arrow_type(t: FieldType) -> DataType {
    match t {
        FieldType::U8 => DataType::UInt8,
        FieldType::U16 => DataType::UInt16,
        FieldType::U32 => DataType::UInt32,
        FieldType::U64 => DataType::UInt64,
        FieldType::I64 => DataType::Int64,
        FieldType::F64 => DataType::Float64,
        FieldType::String => DataType::Utf8,
    }
}

fn type_name(t: FieldType) -> &'static str {
    match t {
        FieldType::U8 => "u8",
        FieldType::U16 => "u16",
        FieldType::U32 => "u32",
        FieldType::U64 => "u64",
        FieldType::I64 => "i64",
        FieldType::F64 => "f64",
        FieldType::String => "string",
    }
}

/// The output columns for fields: `(column name, field name, type)`, in
/// order of first appearance over the series.
fn field_columns(series: &[Series], slices: &[Slice]) -> Vec<(String, String, FieldType)> {
    let mut out: Vec<(String, String, FieldType)> = Vec::new();
    for s in slices {
        for f in &series[s.idx].schema.fields {
            if out.iter().any(|(_, n, t)| *n == f.name && *t == f.ty) {
                continue;
            }
            let col = if out.iter().any(|(c, _, _)| *c == f.name) {
                format!("{}_{}", f.name, type_name(f.ty))
            } else {
                f.name.to_string()
            };
            out.push((col, f.name.to_string(), f.ty));
        }
    }
    out
}

/// Builds the batch of `slices` (already in series order).
pub(crate) fn batch(series: &[Series], slices: &[Slice]) -> Result<RecordBatch> {
    let rows: usize = slices.iter().map(|s| s.b - s.a).sum();
    let mut fields = vec![Field::new(
        "time",
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        false,
    )];
    let mut cols: Vec<ArrayRef> = Vec::new();
    let mut times = Vec::with_capacity(rows);
    for s in slices {
        times.extend(series[s.idx].times[s.a..s.b].iter().map(|&t| t as i64));
    }
    cols.push(Arc::new(
        TimestampMicrosecondArray::from(times).with_timezone("UTC"),
    ));
    let keys: BTreeSet<&str> = slices
        .iter()
        .flat_map(|s| series[s.idx].schema.tags.iter().map(|(k, _)| k.as_str()))
        .filter(|k| *k != "host")
        .collect();
    for key in keys {
        let values: BTreeSet<&str> = slices
            .iter()
            .filter_map(|s| series[s.idx].schema.tag(key))
            .collect();
        let values: Vec<&str> = values.into_iter().collect();
        let mut k: Vec<Option<i32>> = Vec::with_capacity(rows);
        for s in slices {
            let v = series[s.idx]
                .schema
                .tag(key)
                .and_then(|v| values.binary_search(&v).ok())
                .map(|i| i as i32);
            k.extend(std::iter::repeat_n(v, s.b - s.a));
        }
        let dict = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(k),
            Arc::new(StringArray::from(values)),
        )
        .map_err(|e| encode_err(key, e))?;
        fields.push(Field::new(
            key,
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ));
        cols.push(Arc::new(dict));
    }
    for (col, name, ty) in field_columns(series, slices) {
        fields.push(Field::new(&col, arrow_type(ty), true));
        cols.push(field_array(series, slices, &name, ty, rows));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(|e| encode_err("batch", e))
}

fn encode_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Encode {
        file: what.to_string(),
        reason: e.to_string(),
    }
}

/// One field's column over the slices: values where the series has the
/// field (with that type) and the record held it, null elsewhere.
fn field_array(
    series: &[Series],
    slices: &[Slice],
    name: &str,
    ty: FieldType,
    rows: usize,
) -> ArrayRef {
    let mut valid = vec![true; rows];
    let mut any_null = false;
    let mut at = 0usize;
    // Where each slice's values come from: the series' column, if it has one.
    let sources: Vec<Option<&crate::series::Column>> = slices
        .iter()
        .map(|s| {
            let sr = &series[s.idx];
            sr.schema
                .fields
                .iter()
                .position(|f| f.name == name && f.ty == ty)
                .map(|i| &sr.cols[i])
        })
        .collect();
    for (s, c) in slices.iter().zip(&sources) {
        match c {
            Some(c) => {
                for &m in &c.missing {
                    let m = m as usize;
                    if m >= s.a && m < s.b {
                        valid[at + m - s.a] = false;
                        any_null = true;
                    }
                }
            }
            None => {
                valid[at..at + s.b - s.a].fill(false);
                any_null = true;
            }
        }
        at += s.b - s.a;
    }
    let nulls = any_null.then(|| NullBuffer::from(valid));
    macro_rules! prim {
        ($variant:ident, $arr:ident, $zero:expr) => {{
            let mut v = Vec::with_capacity(rows);
            for (s, c) in slices.iter().zip(&sources) {
                match c.map(|c| &c.values) {
                    Some(Values::$variant(x)) => v.extend_from_slice(&x[s.a..s.b]),
                    _ => v.extend(std::iter::repeat_n($zero, s.b - s.a)),
                }
            }
            Arc::new($arr::new(v.into(), nulls)) as ArrayRef
        }};
    }
    match ty {
        FieldType::U8 => prim!(U8, UInt8Array, 0u8),
        FieldType::U16 => prim!(U16, UInt16Array, 0u16),
        FieldType::U32 => prim!(U32, UInt32Array, 0u32),
        FieldType::U64 => prim!(U64, UInt64Array, 0u64),
        FieldType::I64 => prim!(I64, Int64Array, 0i64),
        FieldType::F64 => prim!(F64, Float64Array, 0f64),
        FieldType::String => {
            let mut v: Vec<Option<&str>> = Vec::with_capacity(rows);
            let mut row = 0usize;
            for (s, c) in slices.iter().zip(&sources) {
                match c.map(|c| &c.values) {
                    Some(Values::Str { text, ends }) => {
                        for i in s.a..s.b {
                            let from = if i == 0 { 0 } else { ends[i - 1] };
                            v.push(nulls_ok(&nulls, row).then(|| &text[from..ends[i]]));
                            row += 1;
                        }
                    }
                    _ => {
                        v.extend(std::iter::repeat_n(None, s.b - s.a));
                        row += s.b - s.a;
                    }
                }
            }
            Arc::new(StringArray::from(v))
        }
    }
}

fn nulls_ok(n: &Option<NullBuffer>, row: usize) -> bool {
    n.as_ref().is_none_or(|n| n.is_valid(row))
}

/// The batch as a Parquet file: zstd, page and row-group statistics,
/// sorting columns recorded (tags then time).
pub(crate) fn encode(batch: &RecordBatch, enc: Encoding, name: &str) -> Result<Vec<u8>> {
    let level = ZstdLevel::try_new(enc.zstd_level).map_err(|e| encode_err(name, e))?;
    let mut props = WriterProperties::builder();
    if enc.time_delta {
        props = props
            .set_column_dictionary_enabled(ColumnPath::from("time"), false)
            .set_column_encoding(
                ColumnPath::from("time"),
                ColumnEncoding::DELTA_BINARY_PACKED,
            );
    }
    if enc.wide_fields_plain {
        for f in batch.schema().fields() {
            let path = ColumnPath::from(f.name().as_str());
            match f.data_type() {
                DataType::UInt64 | DataType::Int64 => {
                    props = props
                        .set_column_dictionary_enabled(path.clone(), false)
                        .set_column_encoding(path, ColumnEncoding::DELTA_BINARY_PACKED);
                }
                DataType::Float64 => props = props.set_column_dictionary_enabled(path, false),
                _ => {}
            }
        }
    }
    let props = props
        .set_compression(Compression::ZSTD(level))
        .set_statistics_enabled(if enc.page_statistics {
            EnabledStatistics::Page
        } else {
            EnabledStatistics::Chunk
        })
        .set_max_row_group_size(enc.row_group_rows.max(1))
        .set_write_batch_size(enc.write_batch_rows.max(1))
        .set_created_by(format!("loom export {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props))
        .map_err(|e| encode_err(name, e))?;
    w.write(batch).map_err(|e| encode_err(name, e))?;
    w.close().map_err(|e| encode_err(name, e))?;
    Ok(buf)
}
