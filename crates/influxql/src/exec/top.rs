//! Executing `top(field, N)` / `bottom(field, N)`: the N largest (smallest)
//! values of each group, ties to the earliest points (as InfluxDB 1.x),
//! listed in time order.
//!
//! On one series with the indexed field and no field predicate, the
//! engine finds the N-th largest value `x` from bin counts
//! (`value_at_rank`), then a range scan over `[x, ∞)` reads only chunks
//! holding such values. Otherwise the window is scanned, keeping the best
//! N points seen.

use loom::{Snapshot, Value};

use crate::error::Result;
use crate::exec::limits::{Limits, Ticker};
use crate::exec::page::{add_series, page};
use crate::exec::value::value_cmp;
use crate::plan::{Group, TopPlan};
use crate::result::{Cell, SeriesResult, StatementResult};

/// A candidate: value, time µs, series position in the group.
type Point = (Value, u64, usize);

/// Keeps the `n` best points: larger value first, then earlier, then series order.
struct Best {
    n: usize,
    points: Vec<Point>,
    /// Smaller values are better (`bottom`).
    bottom: bool,
}

impl Best {
    fn order(&self, a: &Point, b: &Point) -> std::cmp::Ordering {
        let by_value = if self.bottom {
            value_cmp(a.0, b.0)
        } else {
            value_cmp(b.0, a.0)
        };
        by_value.then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
    }

    fn push(&mut self, p: Point) {
        self.points.push(p);
        if self.points.len() >= self.n.saturating_mul(2).max(1024) {
            self.trim();
        }
    }

    fn trim(&mut self) {
        let mut points = std::mem::take(&mut self.points);
        points.sort_by(|a, b| self.order(a, b));
        points.truncate(self.n);
        self.points = points;
    }
}

fn group_points(
    snap: &Snapshot,
    plan: &TopPlan,
    group: &Group,
    (t0, t1): (u64, u64),
    limits: &Limits,
) -> Result<Vec<Point>> {
    let n = usize::try_from(plan.n).unwrap_or(usize::MAX);
    let mut best = Best {
        n,
        points: Vec::new(),
        bottom: plan.bottom,
    };
    let single_indexed = plan.fields.is_empty()
        && !group.filtered()
        && group.series.len() == 1
        && group.series[0].index_field() == Some(plan.field.name());
    if single_indexed {
        let id = group.series[0].id;
        if plan.bottom {
            let x = snap.value_at_rank(id, t0, t1, |m| plan.n.min(m))?;
            if let Some(x) = x {
                snap.range_scan(id, t0, t1, 0, x, |ts, v, _| {
                    best.push((Value::Unsigned(v), ts, 0));
                })?;
            }
        } else {
            let x = snap.value_at_rank(id, t0, t1, |m| m.saturating_sub(plan.n) + 1)?;
            if let Some(x) = x {
                snap.range_scan(id, t0, t1, x, u64::MAX, |ts, v, _| {
                    best.push((Value::Unsigned(v), ts, 0));
                })?;
            }
        }
    } else {
        let mut ticker = Ticker::new(limits);
        for (pos, s) in group.series.iter().enumerate() {
            limits.check()?;
            let Some(def) = s.schema.field(&plan.field.name) else {
                continue;
            };
            snap.scan(s.id, t0, t1, |ts, bytes| {
                if !ticker.tick() {
                    return;
                }
                for p in &plan.fields {
                    match s.schema.field(&p.field.name) {
                        Some(d) if p.matches(d, bytes) => {}
                        _ => return,
                    }
                }
                if !s.passes(bytes) {
                    return;
                }
                if let Some(v) = def.read(bytes) {
                    best.push((v, ts, pos));
                }
            })?;
        }
        ticker.result()?;
    }
    best.trim();
    let mut points = best.points;
    points.sort_by_key(|p| (p.1, p.2));
    Ok(points)
}

/// Runs a top plan.
pub fn execute(snap: &Snapshot, plan: &TopPlan, limits: &Limits) -> Result<StatementResult> {
    let mut result = StatementResult::default();
    let Some(window) = plan.time.to_us() else {
        return Ok(result);
    };
    limits.rows(usize::try_from(plan.n).unwrap_or(usize::MAX))?;
    let mut total = 0usize;
    for group in &plan.groups {
        let rows: Vec<Vec<Cell>> = group_points(snap, plan, group, window, limits)?
            .into_iter()
            .map(|(v, ts, _)| vec![Cell::Time(i128::from(ts) * 1000), v.into()])
            .collect();
        let series = SeriesResult {
            name: plan.measurement.clone(),
            tags: group.tags.clone(),
            columns: vec!["time".into(), plan.column.clone()],
            values: page(rows, plan.descending, plan.offset, plan.limit),
        };
        add_series(&mut result, &mut total, limits, series)?;
    }
    Ok(result)
}
