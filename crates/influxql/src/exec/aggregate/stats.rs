//! Whole-bucket statistics InfluxDB types its own way: `spread`/`difference`
//! of integers stay integers; `stddev`, `median` and `mode` over scanned values.

use super::*;

/// `a - b` as InfluxDB types it: integers stay integers.
pub(super) fn difference(a: Value, b: Value) -> Cell {
    match (a, b) {
        (Value::Unsigned(x), Value::Unsigned(y)) => Cell::UInt(x.wrapping_sub(y)),
        (Value::Signed(x), Value::Signed(y)) => Cell::Int(x.wrapping_sub(y)),
        (x, y) => Cell::Float(x.as_f64() - y.as_f64()),
    }
}

/// InfluxDB 1.x's sample standard deviation: an incremental mean, then
/// the squared deviations summed in point order; null below two values.
pub(super) fn stddev(values: &[(Value, u64)]) -> Cell {
    if values.len() < 2 {
        return Cell::Null;
    }
    let mut mean = 0.0f64;
    let mut count = 0usize;
    for (v, _) in values {
        count += 1;
        mean += (v.as_f64() - mean) / count as f64;
    }
    let variance: f64 = values
        .iter()
        .map(|(v, _)| (v.as_f64() - mean).powi(2))
        .sum();
    Cell::Float((variance / (count - 1) as f64).sqrt())
}

/// InfluxDB 1.x's median: the middle value, or `lo + (hi - lo) / 2` of
/// the two middle ones, as a float.
pub(super) fn median(values: &mut [(Value, u64)]) -> Cell {
    if values.is_empty() {
        return Cell::Null;
    }
    values.sort_unstable_by(|a, b| value_cmp(a.0, b.0));
    let n = values.len();
    if n % 2 == 1 {
        return Cell::Float(values[n / 2].0.as_f64());
    }
    let (lo, hi) = (values[n / 2 - 1].0, values[n / 2].0);
    let half = match (lo, hi) {
        (Value::Signed(a), Value::Signed(b)) => (b - a) as f64 / 2.0,
        (Value::Unsigned(a), Value::Unsigned(b)) => (b - a) as f64 / 2.0,
        (a, b) => (b.as_f64() - a.as_f64()) / 2.0,
    };
    Cell::Float(lo.as_f64() + half)
}

/// The mode: the most frequent value, a tie going to the smallest.
/// InfluxDB 1.x breaks ties by the order its (unstable) sort leaves equal
/// values in, which no rule reproduces; with no tie, or all values
/// different (then the smallest), both agree.
pub(super) fn mode(values: &mut [(Value, u64)]) -> Cell {
    values.sort_unstable_by(|a, b| value_cmp(a.0, b.0));
    let mut best: Option<(Value, usize)> = None;
    let mut k = 0;
    while k < values.len() {
        let v = values[k].0;
        let mut j = k;
        while j < values.len() && value_cmp(values[j].0, v).is_eq() {
            j += 1;
        }
        if best.is_none_or(|(_, n)| j - k > n) {
            best = Some((v, j - k));
        }
        k = j;
    }
    best.map_or(Cell::Null, |(v, _)| v.into())
}
