//! Ordering and summing field values of mixed storage types.

use std::cmp::Ordering;

use loom::Value;

use crate::result::Cell;

/// Total order on values: integers exactly, otherwise as doubles.
pub fn value_cmp(a: Value, b: Value) -> Ordering {
    match (a, b) {
        (Value::Unsigned(x), Value::Unsigned(y)) => x.cmp(&y),
        (Value::Signed(x), Value::Signed(y)) => x.cmp(&y),
        (Value::Unsigned(x), Value::Signed(y)) => i128::from(x).cmp(&i128::from(y)),
        (Value::Signed(x), Value::Unsigned(y)) => i128::from(x).cmp(&i128::from(y)),
        (x, y) => x.as_f64().total_cmp(&y.as_f64()),
    }
}

/// A running sum that keeps integers exact.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sum {
    int: i128,
    float: f64,
    any_float: bool,
    any_unsigned: bool,
}

impl Sum {
    /// Adds one value.
    #[inline]
    pub fn add(&mut self, v: Value) {
        match v {
            Value::Unsigned(u) => {
                self.any_unsigned = true;
                self.int = self.int.saturating_add(i128::from(u));
            }
            Value::Signed(i) => self.int = self.int.saturating_add(i128::from(i)),
            Value::Float(f) => {
                self.any_float = true;
                self.float += f;
            }
        }
    }

    /// Adds an exact unsigned total (from index summaries).
    pub fn add_unsigned_total(&mut self, total: u128) {
        self.any_unsigned = true;
        self.int = self
            .int
            .saturating_add(i128::try_from(total).unwrap_or(i128::MAX));
    }

    /// The sum as a double (for `mean`).
    pub fn as_f64(&self) -> f64 {
        self.int as f64 + self.float
    }

    /// The sum as InfluxDB reports it: integer for integer fields.
    pub fn cell(&self) -> Cell {
        if self.any_float {
            Cell::Float(self.as_f64())
        } else if self.any_unsigned && self.int >= 0 {
            u64::try_from(self.int).map_or(Cell::Float(self.int as f64), Cell::UInt)
        } else {
            i64::try_from(self.int).map_or(Cell::Float(self.int as f64), Cell::Int)
        }
    }
}
