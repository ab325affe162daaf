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

/// The mode as influxd 1.6.7 picks it (`IntegerModeReduceSlice` and its
/// float twin): the points in time order (ties: series order), sorted by
/// value, then scanned once; a value's run counts from its second point
/// (a value seen once never wins but the smallest), and a later (larger)
/// value with as many points takes over when its first point is no later
/// than the point at which the current pick reached that count. influxd
/// sorts with Go's `sort.Sort`, an insertion sort (stable) up to 12 points
/// and pdqsort (unstable) beyond; Loom sorts stably, so its pick equals
/// influxd's for buckets of up to 12 points, and beyond that whenever no
/// two values tie for the top count (see docs/influxql.md).
pub(super) fn mode(values: &mut [(Value, u64)]) -> Cell {
    values.sort_by_key(|p| p.1);
    values.sort_by(|a, b| value_cmp(a.0, b.0));
    let Some(&(first, first_t)) = values.first() else {
        return Cell::Null;
    };
    let (mut most_freq, mut curr_freq) = (0usize, 0usize);
    let (mut curr, mut most) = (first, first);
    let (mut curr_t, mut most_t) = (first_t, first_t);
    for &(v, t) in values.iter() {
        if !value_cmp(v, curr).is_eq() {
            (curr_freq, curr, curr_t) = (1, v, t);
            continue;
        }
        curr_freq += 1;
        if most_freq > curr_freq || (most_freq == curr_freq && curr_t > most_t) {
            continue;
        }
        (most_freq, most, most_t) = (curr_freq, v, t);
    }
    most.into()
}
