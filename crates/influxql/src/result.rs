//! What executing a statement produces, before encoding.

/// One value of a result row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// No value (empty bucket, percentile out of range, missing tag).
    Null,
    /// A time in ns since the epoch.
    Time(i128),
    /// An unsigned integer.
    UInt(u64),
    /// A signed integer.
    Int(i64),
    /// A double.
    Float(f64),
    /// A string (tag values, names).
    Str(String),
    /// A boolean (`SHOW RETENTION POLICIES`' `default`).
    Bool(bool),
}

impl From<loom::Value> for Cell {
    fn from(v: loom::Value) -> Self {
        match v {
            loom::Value::Unsigned(u) => Cell::UInt(u),
            loom::Value::Signed(i) => Cell::Int(i),
            loom::Value::Float(f) => Cell::Float(f),
        }
    }
}

/// One output series: a name, its GROUP BY tags, columns and rows.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesResult {
    /// Measurement (or `measurements`, `databases` for SHOW).
    pub name: String,
    /// GROUP BY tags; empty when none.
    pub tags: Vec<(String, String)>,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub values: Vec<Vec<Cell>>,
}

/// The answer to one statement: its series, possibly none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatementResult {
    /// Output series.
    pub series: Vec<SeriesResult>,
}
