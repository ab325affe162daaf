//! Executing aggregates over a subquery's rows: the subquery runs first
//! (on the same snapshot), then its series are grouped by the outer GROUP
//! BY tags and its rows bucketed by the outer `GROUP BY time`, each outer
//! function reading one of its columns (nulls skipped).

use std::borrow::Cow;
use std::collections::BTreeMap;

use loom::{FieldDef, FieldType, Snapshot, Value};

use crate::error::Result;
use crate::exec::aggregate::{fill, Acc};
use crate::exec::page::{add_series, page};
use crate::exec::{Access, Limits};
use crate::plan::subquery::SubqueryPlan;
use crate::plan::{Call, Catalog};
use crate::result::{Cell, SeriesResult, StatementResult};

fn value(c: &Cell) -> Option<Value> {
    match c {
        Cell::UInt(u) => Some(Value::Unsigned(*u)),
        Cell::Int(i) => Some(Value::Signed(*i)),
        Cell::Float(f) => Some(Value::Float(*f)),
        _ => None,
    }
}

/// One subquery row: time (ns) and, per outer call, its input value.
type Point = (i128, Vec<Option<Value>>);

/// An outer group's tags, and its measurement name and rows.
type Groups = BTreeMap<Vec<(String, String)>, (String, Vec<Point>)>;

fn answer(plan: &SubqueryPlan, points: &[&Point]) -> Option<Vec<(Cell, Option<u64>)>> {
    if points.is_empty() {
        return None;
    }
    Some(
        plan.calls
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let mut acc = Acc::default();
                for (t, vals) in points {
                    if let Some(v) = vals[k] {
                        acc.add(c.func, v, u64::try_from(*t / 1000).unwrap_or(0));
                    }
                }
                acc.finish(c.func)
            })
            .collect(),
    )
}

/// Runs a subquery plan.
pub fn execute(
    snap: &Snapshot,
    catalog: &Catalog,
    plan: &SubqueryPlan,
    limits: &Limits,
    access: &mut Access,
) -> Result<StatementResult> {
    let inner = crate::exec::execute(snap, catalog, &plan.inner, limits, access)?;
    let groups = outer_groups(plan, &inner);
    let calls = outer_calls(plan);
    let mut columns = vec!["time".to_string()];
    columns.extend(plan.calls.iter().map(|c| c.column.clone()));
    let mut result = StatementResult::default();
    let mut total = 0usize;
    for (tags, (name, mut points)) in groups {
        limits.check()?;
        points.sort_by_key(|p| p.0);
        let rows = match plan.interval_ns {
            None => whole_rows(plan, &points),
            Some(interval) => match bucketed_rows(plan, &calls, &points, interval, limits)? {
                Some(rows) => rows,
                None => continue,
            },
        };
        let series = SeriesResult {
            name,
            tags,
            columns: columns.clone(),
            values: page(rows, plan.descending, plan.offset, plan.limit),
        };
        add_series(&mut result, &mut total, limits, series)?;
    }
    Ok(result)
}

/// The subquery's series grouped by the outer GROUP BY tags (a missing tag
/// is empty), keeping the rows within the outer time range, each with the
/// values the outer calls read.
fn outer_groups(plan: &SubqueryPlan, inner: &StatementResult) -> Groups {
    let mut groups: Groups = BTreeMap::new();
    for s in &inner.series {
        let key: Vec<(String, String)> = plan
            .keys
            .iter()
            .map(|k| {
                let v = s.tags.iter().find(|(t, _)| t == k).map_or("", |(_, v)| v);
                (k.clone(), v.to_string())
            })
            .collect();
        let cols: Vec<Option<usize>> = plan
            .calls
            .iter()
            .map(|c| s.columns.iter().position(|n| *n == c.input))
            .collect();
        let entry = groups
            .entry(key)
            .or_insert_with(|| (s.name.clone(), Vec::new()));
        for row in &s.values {
            let Some(Cell::Time(t)) = row.first() else {
                continue;
            };
            if plan.time.lo_ns.is_some_and(|lo| *t < lo)
                || plan.time.hi_ns.is_some_and(|hi| *t > hi)
            {
                continue;
            }
            let vals = cols
                .iter()
                .map(|c| c.and_then(|i| row.get(i)).and_then(value))
                .collect();
            entry.1.push((*t, vals));
        }
    }
    groups
}

/// The outer calls as [`fill`] reads them (each over a float column named
/// after its input).
fn outer_calls(plan: &SubqueryPlan) -> Vec<Call> {
    plan.calls
        .iter()
        .map(|c| Call {
            func: c.func,
            field: FieldDef {
                name: Cow::Owned(c.input.clone()),
                offset: 0,
                ty: FieldType::F64,
            },
            column: c.column.clone(),
        })
        .collect()
}

/// Rows of one outer group without time buckets: none when it has no
/// point, else one, timed at the selected point (one selector alone) or at
/// the outer range's lower bound.
fn whole_rows(plan: &SubqueryPlan, points: &[Point]) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    let all: Vec<&Point> = points.iter().collect();
    if let Some(cells) = answer(plan, &all) {
        let time = match (plan.selector_time, cells.first()) {
            (true, Some((_, Some(t)))) => i128::from(*t) * 1000,
            _ => plan.time.lo_ns.unwrap_or(0),
        };
        let mut row = vec![Cell::Time(time)];
        row.extend(cells.into_iter().map(|(c, _)| c));
        rows.push(row);
    }
    rows
}

/// Rows of one outer group's `points` (sorted by time) in buckets of `iv`
/// ns starting `off` past its multiples, filled as the plan asks; `None`
/// when the group has no point (it gets no series).
fn bucketed_rows(
    plan: &SubqueryPlan,
    calls: &[Call],
    points: &[Point],
    (iv, off): (i128, i128),
    limits: &Limits,
) -> Result<Option<Vec<Vec<Cell>>>> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Ok(None);
    };
    let lo = plan.time.lo_ns.unwrap_or(first.0);
    let hi = plan.time.hi_ns.unwrap_or(last.0);
    let start = lo - (lo - off).rem_euclid(iv);
    limits.rows(usize::try_from((hi - start) / iv + 1).unwrap_or(usize::MAX))?;
    let mut buckets = Vec::new();
    let mut k = 0;
    let mut b = start;
    while b <= hi {
        let from = k;
        while k < points.len() && points[k].0 < b + iv {
            k += 1;
        }
        let inside: Vec<&Point> = points[from..k].iter().collect();
        let cells = answer(plan, &inside).map(|c| c.into_iter().map(|(c, _)| c).collect());
        buckets.push((b, cells));
        b += iv;
    }
    Ok(Some(fill(&plan.fill, calls, buckets)))
}
