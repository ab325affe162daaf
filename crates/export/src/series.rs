//! One series' records of an export batch, decoded into columns as they are
//! scanned: times, and each field of the source's schema as a typed vector.

use std::sync::Arc;

use loom::{FieldType, SourceSchema, Value};

/// Typed values of one field, in record order.
pub(crate) enum Values {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    /// Text of every record back to back; `ends[i]` is where record i's ends.
    Str {
        text: String,
        ends: Vec<usize>,
    },
}

/// One field's column: its values and the rows whose record was too short
/// (or whose string was not UTF-8) to hold it, exported as nulls.
pub(crate) struct Column {
    pub values: Values,
    pub missing: Vec<u32>,
}

impl Column {
    fn new(ty: FieldType) -> Column {
        let values = match ty {
            FieldType::U8 => Values::U8(Vec::new()),
            FieldType::U16 => Values::U16(Vec::new()),
            FieldType::U32 => Values::U32(Vec::new()),
            FieldType::U64 => Values::U64(Vec::new()),
            FieldType::I64 => Values::I64(Vec::new()),
            FieldType::F64 => Values::F64(Vec::new()),
            FieldType::String => Values::Str {
                text: String::new(),
                ends: Vec::new(),
            },
        };
        Column {
            values,
            missing: Vec::new(),
        }
    }
}

/// A series' records: `times[i]` and row `i` of every column.
pub(crate) struct Series {
    pub schema: Arc<SourceSchema>,
    /// The `host` its rows belong to (its own tag, else the exporter's).
    pub host: String,
    pub times: Vec<u64>,
    pub cols: Vec<Column>,
}

impl Series {
    /// An empty series of `schema` from `host`.
    pub fn new(schema: Arc<SourceSchema>, host: String) -> Series {
        let cols = schema.fields.iter().map(|f| Column::new(f.ty)).collect();
        Series {
            schema,
            host,
            times: Vec::new(),
            cols,
        }
    }

    /// Decodes one record.
    #[inline]
    pub fn push(&mut self, ts: u64, bytes: &[u8]) {
        let row = self.times.len() as u32;
        self.times.push(ts);
        for (f, c) in self.schema.fields.iter().zip(self.cols.iter_mut()) {
            let v = f.read(bytes);
            match (&mut c.values, v) {
                (Values::U8(x), Some(Value::Unsigned(v))) => x.push(v as u8),
                (Values::U16(x), Some(Value::Unsigned(v))) => x.push(v as u16),
                (Values::U32(x), Some(Value::Unsigned(v))) => x.push(v as u32),
                (Values::U64(x), Some(Value::Unsigned(v))) => x.push(v),
                (Values::I64(x), Some(Value::Signed(v))) => x.push(v),
                (Values::F64(x), Some(Value::Float(v))) => x.push(v),
                (Values::Str { text, ends }, _) => {
                    let s = f.read_str(bytes);
                    text.push_str(s.unwrap_or(""));
                    ends.push(text.len());
                    if s.is_none() {
                        c.missing.push(row);
                    }
                }
                (vals, _) => {
                    push_zero(vals);
                    c.missing.push(row);
                }
            }
        }
    }

    /// Rows `[a, b)` split where the UTC hour changes: `(hour, a, b)` runs.
    pub fn hour_runs(&self) -> Vec<(u64, usize, usize)> {
        let mut out = Vec::new();
        let mut a = 0;
        while a < self.times.len() {
            let hour = self.times[a] / crate::layout::HOUR_US;
            let end_ts = (hour + 1) * crate::layout::HOUR_US;
            let b = a + self.times[a..].partition_point(|&t| t < end_ts);
            out.push((hour, a, b));
            a = b;
        }
        out
    }
}

fn push_zero(v: &mut Values) {
    match v {
        Values::U8(x) => x.push(0),
        Values::U16(x) => x.push(0),
        Values::U32(x) => x.push(0),
        Values::U64(x) => x.push(0),
        Values::I64(x) => x.push(0),
        Values::F64(x) => x.push(0.0),
        Values::Str { text, ends } => ends.push(text.len()),
    }
}
