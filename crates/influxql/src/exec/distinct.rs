//! Executing `distinct(field)` alone: every different value of each group
//! (and `GROUP BY time` bucket), one row each at the bucket's start (the
//! window's lower bound without buckets), ordered as InfluxDB 1.x's
//! distinct reducer emits them: by the time of each value's first point,
//! then by value. Empty buckets give no rows, whatever `fill` says (as
//! influxd answers).

use loom::{Snapshot, Value};

use crate::error::Result;
use crate::exec::limits::{Limits, Ticker};
use crate::exec::page::{add_series, page};
use crate::exec::value::value_cmp;
use crate::plan::{AggregatePlan, Group};
use crate::result::{Cell, SeriesResult, StatementResult};

/// The different values of `group` over `[t0, t1]` µs, by first time then value.
fn values(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (t0, t1): (u64, u64),
    limits: &Limits,
) -> Result<Vec<Value>> {
    let field = &plan.calls[0].field;
    let mut out = Vec::new();
    let mut ticker = Ticker::new(limits);
    for s in &group.series {
        limits.check()?;
        let Some(def) = s.schema.field(field.name()) else {
            continue;
        };
        snap.scan(s.id, t0, t1, |ts, bytes| {
            if !ticker.tick() {
                return;
            }
            if plan.fields.iter().all(|p| {
                s.schema
                    .field(p.field.name())
                    .is_some_and(|d| p.matches(d, bytes))
            }) && s.passes(bytes)
            {
                if let Some(v) = def.read(bytes) {
                    out.push((v, ts));
                }
            }
        })?;
        // Keep memory to the different values (each at its first time).
        out.sort_unstable_by(|a, b| value_cmp(a.0, b.0).then(a.1.cmp(&b.1)));
        out.dedup_by(|a, b| value_cmp(a.0, b.0).is_eq());
    }
    ticker.result()?;
    out.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(value_cmp(a.0, b.0)));
    Ok(out.into_iter().map(|(v, _)| v).collect())
}

/// Runs a plan whose one call is `distinct()`.
pub fn execute(snap: &Snapshot, plan: &AggregatePlan, limits: &Limits) -> Result<StatementResult> {
    let mut result = StatementResult::default();
    let columns = vec!["time".to_string(), plan.calls[0].column.clone()];
    let mut total = 0usize;
    for group in &plan.groups {
        let Some((mut t0, t1)) = plan.time.to_us() else {
            continue;
        };
        let mut rows: Vec<Vec<Cell>> = Vec::new();
        match plan.interval_us {
            None => {
                for v in values(snap, plan, group, (t0, t1), limits)? {
                    rows.push(vec![Cell::Time(plan.time.lo_ns.unwrap_or(0)), v.into()]);
                }
            }
            Some(iv) => {
                if plan.time.lo_ns.is_none() {
                    match group
                        .series
                        .iter()
                        .filter_map(|s| snap.time_span(s.id).map(|(a, _)| a))
                        .min()
                    {
                        Some(f) => t0 = t0.max(f),
                        None => continue,
                    }
                }
                if t0 > t1 {
                    continue;
                }
                let (t0i, t1i, ivi) = (i128::from(t0), i128::from(t1), i128::from(iv));
                let start = t0i - (t0i - i128::from(plan.bucket_offset_us)).rem_euclid(ivi);
                limits.rows(usize::try_from((t1i - start) / ivi + 1).unwrap_or(usize::MAX))?;
                let mut any = false;
                let mut b = start;
                while b <= t1i {
                    let w = (b.max(t0i) as u64, (b + ivi - 1).min(t1i) as u64);
                    let vals = values(snap, plan, group, w, limits)?;
                    any |= !vals.is_empty();
                    let t = Cell::Time(b * 1000);
                    for v in vals {
                        rows.push(vec![t.clone(), v.into()]);
                    }
                    b += ivi;
                }
                if !any {
                    rows.clear();
                }
            }
        }
        let series = SeriesResult {
            name: plan.measurement.clone(),
            tags: group.tags.clone(),
            columns: columns.clone(),
            values: page(rows, plan.descending, plan.offset, plan.limit),
        };
        add_series(&mut result, &mut total, limits, series)?;
    }
    Ok(result)
}
