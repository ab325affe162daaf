//! `fill()`: the empty buckets of a group filled as the statement asks
//! (`null`, `none`, a number, `previous`, `linear` as InfluxDB interpolates).

use super::*;

/// Rows of a group's buckets (time in ns, cells or `None` when empty),
/// empty ones filled as `how` says.
pub(crate) fn fill(
    how: &FillPlan,
    calls: &[Call],
    buckets: Vec<(i128, Option<Vec<Cell>>)>,
) -> Vec<Vec<Cell>> {
    let row = |t: i128, cells: Vec<Cell>| {
        let mut r = Vec::with_capacity(cells.len() + 1);
        r.push(Cell::Time(t));
        r.extend(cells);
        r
    };
    match how {
        FillPlan::None => buckets
            .into_iter()
            .filter_map(|(t, c)| c.map(|c| row(t, c)))
            .collect(),
        FillPlan::Null => buckets
            .into_iter()
            .map(|(t, c)| {
                let c = c.unwrap_or_else(|| {
                    calls
                        .iter()
                        .map(|c| match c.func {
                            Func::Count => Cell::UInt(0),
                            _ => Cell::Null,
                        })
                        .collect()
                });
                row(t, c)
            })
            .collect(),
        FillPlan::Value(v) => buckets
            .into_iter()
            .map(|(t, c)| row(t, c.unwrap_or_else(|| vec![v.clone(); calls.len()])))
            .collect(),
        FillPlan::Previous => {
            // A column's last non-null value carries into empty buckets.
            let mut last = vec![Cell::Null; calls.len()];
            buckets
                .into_iter()
                .map(|(t, c)| match c {
                    Some(c) => {
                        for (l, v) in last.iter_mut().zip(&c) {
                            if *v != Cell::Null {
                                *l = v.clone();
                            }
                        }
                        row(t, c)
                    }
                    None => row(t, last.clone()),
                })
                .collect()
        }
        FillPlan::Linear => linear(calls.len(), buckets)
            .into_iter()
            .map(|(t, c)| row(t, c))
            .collect(),
    }
}

/// `fill(linear)`: per column, an empty bucket between two values gets
/// InfluxDB 1.x's `linearFloat` / `linearInteger` of them (slope per ns;
/// for integers the step is truncated toward zero); before the first and
/// after the last value it stays null.
fn linear(width: usize, buckets: Vec<(i128, Option<Vec<Cell>>)>) -> Vec<(i128, Vec<Cell>)> {
    let mut out: Vec<(i128, Vec<Cell>)> = buckets
        .into_iter()
        .map(|(t, c)| (t, c.unwrap_or_else(|| vec![Cell::Null; width])))
        .collect();
    let filled: Vec<bool> = out
        .iter()
        .map(|(_, c)| c.iter().any(|v| *v != Cell::Null))
        .collect();
    for col in 0..width {
        let mut prev: Option<usize> = None;
        for k in 0..out.len() {
            if out[k].1[col] == Cell::Null {
                continue;
            }
            if let Some(p) = prev {
                for m in p + 1..k {
                    if filled[m] {
                        continue;
                    }
                    let v = interpolate(
                        out[m].0,
                        (out[p].0, &out[p].1[col]),
                        (out[k].0, &out[k].1[col]),
                    );
                    out[m].1[col] = v;
                }
            }
            prev = Some(k);
        }
    }
    out
}

fn interpolate(t: i128, (pt, pv): (i128, &Cell), (nt, nv): (i128, &Cell)) -> Cell {
    let int = |c: &Cell| match c {
        Cell::UInt(u) => Some(i128::from(*u)),
        Cell::Int(i) => Some(i128::from(*i)),
        _ => None,
    };
    let float = |c: &Cell| match c {
        Cell::UInt(u) => Some(*u as f64),
        Cell::Int(i) => Some(*i as f64),
        Cell::Float(f) => Some(*f),
        _ => None,
    };
    match (int(pv), int(nv)) {
        (Some(a), Some(b)) => {
            // linearInteger: a float slope per ns, the step truncated.
            let m = (b - a) as f64 / (nt - pt) as f64;
            let v = (m * (t - pt) as f64) as i128 + a;
            match pv {
                Cell::UInt(_) if v >= 0 => Cell::UInt(v as u64),
                _ => i64::try_from(v).map_or(Cell::Null, Cell::Int),
            }
        }
        _ => match (float(pv), float(nv)) {
            (Some(a), Some(b)) => {
                let m = (b - a) / (nt - pt) as f64;
                Cell::Float(m * (t - pt) as f64 + a)
            }
            _ => Cell::Null,
        },
    }
}
