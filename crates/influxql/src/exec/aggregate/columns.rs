//! The output columns of a group's rows: arithmetic of aggregates row by
//! row and transformations (`derivative`, `difference`, `moving_average`,
//! `cumulative_sum`, `elapsed`, …) over a column's non-null values.

use super::*;

/// A group's rows (time, then each call's cell) turned into the output
/// columns: arithmetic row by row; transformations over the column's
/// non-null values, joined back by time (a transformation starts later:
/// its missing rows are null, rows null in every column are left out).
pub(super) fn outputs(outs: &[(String, Out)], rows: Vec<Vec<Cell>>) -> Vec<Vec<Cell>> {
    let times: Vec<i128> = rows
        .iter()
        .map(|r| match r.first() {
            Some(Cell::Time(t)) => *t,
            _ => 0,
        })
        .collect();
    let mut joined: std::collections::BTreeMap<i128, Vec<Cell>> = Default::default();
    let width = outs.len();
    for (col, (_, o)) in outs.iter().enumerate() {
        let values: Vec<(i128, Cell)> = match o {
            Out::Transform(t, k) => {
                let input: Vec<(i128, Cell)> = rows
                    .iter()
                    .zip(&times)
                    .filter_map(|(r, t)| {
                        r.get(k + 1)
                            .filter(|c| **c != Cell::Null)
                            .map(|c| (*t, c.clone()))
                    })
                    .collect();
                transform(*t, &input)
            }
            o => rows
                .iter()
                .zip(&times)
                .map(|(r, t)| (*t, eval(o, &r[1..])))
                .collect(),
        };
        for (t, v) in values {
            joined.entry(t).or_insert_with(|| vec![Cell::Null; width])[col] = v;
        }
    }
    joined
        .into_iter()
        .filter(|(_, cells)| cells.iter().any(|c| *c != Cell::Null))
        .map(|(t, cells)| {
            let mut r = vec![Cell::Time(t)];
            r.extend(cells);
            r
        })
        .collect()
}

/// A number as an exact integer, when it is one.
pub(super) fn as_int(c: &Cell) -> Option<i128> {
    match c {
        Cell::UInt(u) => Some(i128::from(*u)),
        Cell::Int(i) => Some(i128::from(*i)),
        _ => None,
    }
}

pub(super) fn as_float(c: &Cell) -> Option<f64> {
    match c {
        Cell::UInt(u) => Some(*u as f64),
        Cell::Int(i) => Some(*i as f64),
        Cell::Float(f) => Some(*f),
        _ => None,
    }
}

pub(super) fn int_cell(v: i128) -> Cell {
    i64::try_from(v).map_or(Cell::Float(v as f64), Cell::Int)
}

/// `a op b` as InfluxQL computes it: integers stay integers for `+ - *`,
/// `/` is a float; null when either is null or the divisor is zero.
pub(super) fn apply(op: MathOp, a: &Cell, b: &Cell) -> Cell {
    if let (Some(x), Some(y), true) = (as_int(a), as_int(b), op != MathOp::Div) {
        return match op {
            MathOp::Add => int_cell(x + y),
            MathOp::Sub => int_cell(x - y),
            _ => x.checked_mul(y).map_or(Cell::Null, int_cell),
        };
    }
    let (Some(x), Some(y)) = (as_float(a), as_float(b)) else {
        return Cell::Null;
    };
    match op {
        MathOp::Add => Cell::Float(x + y),
        MathOp::Sub => Cell::Float(x - y),
        MathOp::Mul => Cell::Float(x * y),
        MathOp::Div if y == 0.0 => Cell::Null,
        MathOp::Div => Cell::Float(x / y),
    }
}

/// An arithmetic output over one row's call cells. Recursion is bounded by
/// the parser's depth limit.
pub(super) fn eval(o: &Out, cells: &[Cell]) -> Cell {
    match o {
        Out::Call(k) => cells.get(*k).cloned().unwrap_or(Cell::Null),
        Out::Number(c) => c.clone(),
        Out::Math { first, rest } => {
            let mut acc = eval(first, cells);
            for (op, x) in rest {
                acc = apply(*op, &acc, &eval(x, cells));
            }
            acc
        }
        Out::Transform(..) => Cell::Null,
    }
}

/// A transformation over one column's non-null (time ns, value) points.
pub(super) fn transform(t: Transform, input: &[(i128, Cell)]) -> Vec<(i128, Cell)> {
    let mut out = Vec::new();
    match t {
        Transform::Derivative {
            unit_ns,
            non_negative,
        } => {
            for w in input.windows(2) {
                let (Some(a), Some(b)) = (as_float(&w[0].1), as_float(&w[1].1)) else {
                    continue;
                };
                let elapsed = (w[1].0 - w[0].0) as f64 / unit_ns as f64;
                let d = (b - a) / elapsed;
                if !(non_negative && d < 0.0) {
                    out.push((w[1].0, Cell::Float(d)));
                }
            }
        }
        Transform::Difference { non_negative } => {
            for w in input.windows(2) {
                let d = apply(MathOp::Sub, &w[1].1, &w[0].1);
                let negative = as_float(&d).is_some_and(|x| x < 0.0);
                if !(non_negative && negative) {
                    out.push((w[1].0, d));
                }
            }
        }
        Transform::MovingAverage(n) => {
            // InfluxDB's moving-average reducer: a running sum that takes
            // out the value leaving the window, then adds the new one, so
            // the floats round as influxd's do.
            let mut sum = 0.0f64;
            for (k, (t, v)) in input.iter().enumerate() {
                let x = as_float(v).unwrap_or(0.0);
                if k >= n {
                    sum -= as_float(&input[k - n].1).unwrap_or(0.0);
                }
                sum += x;
                if k + 1 >= n {
                    out.push((*t, Cell::Float(sum / n as f64)));
                }
            }
        }
        Transform::CumulativeSum => {
            let mut acc: Option<Cell> = None;
            for (t, v) in input {
                let next = match &acc {
                    None => v.clone(),
                    Some(a) => apply(MathOp::Add, a, v),
                };
                out.push((*t, next.clone()));
                acc = Some(next);
            }
        }
        Transform::Elapsed(unit) => {
            for w in input.windows(2) {
                out.push((w[1].0, int_cell((w[1].0 - w[0].0) / i128::from(unit))));
            }
        }
    }
    out
}
