//! Executing aggregate plans: per group and time bucket, each function is
//! answered from the range index when it can be (index field, no field
//! predicate) and by one scan of the bucket otherwise.

use loom::{Aggregate, Extremes, Snapshot, Value, WindowBins};

use crate::error::Result;
use crate::exec::access::Access;
use crate::exec::limits::{Limits, Ticker};
use crate::exec::mode_unsupported;
use crate::exec::page::{add_series, page};
use crate::exec::rank::influx_rank;
use crate::exec::value::{value_cmp, Sum};
use crate::parse::CompareOp;
use crate::parse::MathOp;
use crate::plan::{
    index_range, AggregatePlan, Call, FillPlan, Func, Group, Operand, Out, Transform,
};
use crate::result::{Cell, SeriesResult, StatementResult};

mod columns;
mod filling;
mod intervals;
mod spread;
mod stats;

use columns::*;
pub(crate) use filling::fill;
use intervals::interval_rows;
use spread::answer_buckets;
use stats::*;

/// One function's value and, for selectors, the selected point's time (µs).
type Answer = (Cell, Option<u64>);

/// State of one function over one bucket.
#[derive(Debug, Default)]
pub(crate) struct Acc {
    count: u64,
    sum: Sum,
    /// Selected value and its (earliest) time, µs.
    pick: Option<(Value, u64)>,
    /// Values and times, for percentiles answered by scanning.
    values: Vec<(Value, u64)>,
    /// `spread()`'s largest value (`pick` holds the smallest).
    spread_hi: Option<Value>,
}

impl Acc {
    #[inline]
    pub(crate) fn add(&mut self, func: Func, v: Value, ts: u64) {
        match func {
            Func::Count => self.count += 1,
            Func::Sum | Func::Mean => {
                self.count += 1;
                self.sum.add(v);
            }
            Func::Min | Func::Max => {
                self.count += 1;
                let better = match self.pick {
                    None => true,
                    Some((p, pt)) => {
                        let o = value_cmp(v, p);
                        let want = if func == Func::Min {
                            std::cmp::Ordering::Less
                        } else {
                            std::cmp::Ordering::Greater
                        };
                        o == want || (o.is_eq() && ts < pt)
                    }
                };
                if better {
                    self.pick = Some((v, ts));
                }
            }
            Func::Percentile(_)
            | Func::Stddev
            | Func::Median
            | Func::Mode
            | Func::CountDistinct
            | Func::Distinct => self.values.push((v, ts)),
            Func::First | Func::Last => {
                // InfluxDB's FirstReduce / LastReduce: earliest (latest)
                // time, a tie going to the larger value.
                let better = match self.pick {
                    None => true,
                    Some((p, pt)) => {
                        let earlier = if func == Func::First {
                            ts < pt
                        } else {
                            ts > pt
                        };
                        earlier || (ts == pt && value_cmp(v, p).is_gt())
                    }
                };
                if better {
                    self.pick = Some((v, ts));
                }
            }
            Func::Spread => {
                self.count += 1;
                let (lo, hi) = match self.pick {
                    None => (v, v),
                    Some((lo, _)) => {
                        let hi = self.spread_hi.unwrap_or(lo);
                        (
                            if value_cmp(v, lo).is_lt() { v } else { lo },
                            if value_cmp(v, hi).is_gt() { v } else { hi },
                        )
                    }
                };
                self.pick = Some((lo, 0));
                self.spread_hi = Some(hi);
            }
        }
    }

    /// The function's value and, for selectors, the selected point's time.
    pub(crate) fn finish(mut self, func: Func) -> (Cell, Option<u64>) {
        match func {
            Func::Count => (Cell::UInt(self.count), None),
            Func::Sum if self.count == 0 => (Cell::Null, None),
            Func::Sum => (self.sum.cell(), None),
            Func::Mean if self.count == 0 => (Cell::Null, None),
            Func::Mean => (Cell::Float(self.sum.as_f64() / self.count as f64), None),
            Func::Min | Func::Max => match self.pick {
                Some((v, t)) => (v.into(), Some(t)),
                None => (Cell::Null, None),
            },
            Func::Percentile(p) => {
                let Some(k) = influx_rank(self.values.len() as u64, p) else {
                    return (Cell::Null, None);
                };
                self.values
                    .sort_unstable_by(|a, b| value_cmp(a.0, b.0).then(a.1.cmp(&b.1)));
                let mut i = (k - 1) as usize;
                let v = self.values[i].0;
                while i > 0 && value_cmp(self.values[i - 1].0, v).is_eq() {
                    i -= 1;
                }
                (v.into(), Some(self.values[i].1))
            }
            Func::First | Func::Last => match self.pick {
                Some((v, t)) => (v.into(), Some(t)),
                None => (Cell::Null, None),
            },
            Func::Spread => match (self.pick, self.spread_hi) {
                (Some((lo, _)), Some(hi)) => (difference(hi, lo), None),
                _ => (Cell::Null, None),
            },
            Func::Stddev => (stddev(&self.values), None),
            Func::Median => (median(&mut self.values), None),
            Func::Mode => (mode(&mut self.values), None),
            // Answered by `exec::distinct`; never reaches here.
            Func::Distinct => (Cell::Null, None),
            Func::CountDistinct => {
                let mut v: Vec<Value> = self.values.iter().map(|p| p.0).collect();
                v.sort_unstable_by(|a, b| value_cmp(*a, *b));
                v.dedup_by(|a, b| value_cmp(*a, *b).is_eq());
                (Cell::UInt(v.len() as u64), None)
            }
        }
    }
}

/// Whether `call` over `group` can be answered from the index alone.
fn indexed(call: &Call, group: &Group, plan: &AggregatePlan) -> bool {
    if !plan.fields.is_empty() || group.filtered() {
        return false;
    }
    match call.func {
        Func::Count => true,
        Func::Sum | Func::Min | Func::Max | Func::Mean | Func::Percentile(_) => group
            .series
            .iter()
            .all(|s| s.index_field() == Some(call.field.name())),
        _ => false,
    }
}

/// Earliest time of a record whose index value is exactly `v`.
fn time_of(snap: &Snapshot, group: &Group, t0: u64, t1: u64, v: u64) -> Result<Option<u64>> {
    let mut best: Option<u64> = None;
    for s in &group.series {
        snap.range_scan(s.id, t0, t1, v, v, |ts, _, _| {
            best = Some(best.map_or(ts, |b| b.min(ts)));
        })?;
    }
    Ok(best)
}

/// The extremes the calls among `calls` ask for.
fn extremes_of<'a>(calls: impl IntoIterator<Item = &'a Call>) -> Extremes {
    let mut e = Extremes::NONE;
    for c in calls {
        e.min |= c.func == Func::Min;
        e.max |= c.func == Func::Max;
    }
    e
}

fn indexed_call(
    snap: &Snapshot,
    call: &Call,
    group: &Group,
    (t0, t1): (u64, u64),
    want_time: bool,
) -> Result<(Cell, Option<u64>)> {
    // One engine call over the group's series: their range-index bin
    // counts are merged, so many series cost what one holding the same
    // records costs. count() needs no range index.
    let ids: Vec<loom::SourceId> = group.series.iter().map(|s| s.id).collect();
    if call.func == Func::Count {
        return Ok((Cell::UInt(snap.count_many(&ids, t0, t1)?), None));
    }
    let (w, a) = window(snap, &ids, (t0, t1), std::slice::from_ref(call))?;
    window_call(snap, (&a, w.as_ref()), call, group, (t0, t1), want_time)
}

/// One pass over the window of the group's series for `calls`: merged bin
/// counts only when a percentile needs them (80 KB per bucket for 10 000
/// bins, which a fine `GROUP BY time` would pay per bucket), the count,
/// sum and the extremes the calls ask for.
fn window<'a>(
    snap: &'a Snapshot,
    ids: &[loom::SourceId],
    (t0, t1): (u64, u64),
    calls: &[Call],
) -> Result<(Option<WindowBins<'a>>, Aggregate)> {
    let extremes = extremes_of(calls);
    if calls.iter().any(|c| matches!(c.func, Func::Percentile(_))) {
        let w = snap.window_many(ids, t0, t1, extremes)?;
        let a = w.aggregate();
        Ok((Some(w), a))
    } else {
        Ok((None, snap.aggregate_many_with(ids, t0, t1, extremes)?))
    }
}

/// `call`'s answer from the window's aggregate `a` and merged bins `w`
/// (gathered by `window` for calls including this one).
fn window_call(
    snap: &Snapshot,
    (a, w): (&Aggregate, Option<&WindowBins<'_>>),
    call: &Call,
    group: &Group,
    (t0, t1): (u64, u64),
    want_time: bool,
) -> Result<(Cell, Option<u64>)> {
    let (cell, picked) = match call.func {
        Func::Count => return Ok((Cell::UInt(a.count), None)),
        Func::Percentile(p) => {
            let rank = |n| influx_rank(n, p).unwrap_or(0);
            let v = match w {
                Some(w) => w.value_at_rank(rank)?,
                None => {
                    let ids: Vec<loom::SourceId> = group.series.iter().map(|s| s.id).collect();
                    snap.value_at_rank_many(&ids, t0, t1, rank)?
                }
            };
            (v.map_or(Cell::Null, Cell::UInt), v)
        }
        Func::Min => (a.min.map_or(Cell::Null, Cell::UInt), a.min),
        Func::Max => (a.max.map_or(Cell::Null, Cell::UInt), a.max),
        _ if a.count == 0 => (Cell::Null, None),
        Func::Sum | Func::Mean => {
            let mut sum = Sum::default();
            sum.add_unsigned_total(a.sum);
            let cell = if call.func == Func::Sum {
                sum.cell()
            } else {
                Cell::Float(sum.as_f64() / a.count as f64)
            };
            (cell, None)
        }
        _ => (Cell::Null, None),
    };
    let t = match (want_time, picked) {
        (true, Some(v)) => time_of(snap, group, t0, t1, v)?,
        _ => None,
    };
    Ok((cell, t))
}

/// A bucket whose every call is answered from the index: one pass over
/// the window gathers what they all need (count, sum, extremes, merged
/// bins when a percentile is asked).
fn indexed_bucket(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (t0, t1): (u64, u64),
) -> Result<(u64, Vec<Answer>)> {
    let ids: Vec<loom::SourceId> = group.series.iter().map(|s| s.id).collect();
    if plan.calls.iter().all(|c| c.func == Func::Count) {
        let n = snap.count_many(&ids, t0, t1)?;
        if n == 0 {
            return Ok((0, Vec::new()));
        }
        return Ok((
            n,
            plan.calls.iter().map(|_| (Cell::UInt(n), None)).collect(),
        ));
    }
    let (w, a) = window(snap, &ids, (t0, t1), &plan.calls)?;
    if a.count == 0 {
        return Ok((0, Vec::new()));
    }
    let want_time = plan.selector_time;
    let answers = plan
        .calls
        .iter()
        .map(|c| window_call(snap, (&a, w.as_ref()), c, group, (t0, t1), want_time))
        .collect::<Result<Vec<_>>>()?;
    Ok((a.count, answers))
}

/// The exact range of indexed values a count-only plan asks for, when every
/// call is `count()` and every condition is an integer bound on each
/// series' indexed field: such a bucket is one `count_matching` per series,
/// which reads only chunks whose bins can hold a match.
fn counted_range(plan: &AggregatePlan, group: &Group) -> Option<(u64, u64)> {
    if plan.fields.is_empty()
        || group.filtered()
        || plan.calls.iter().any(|c| c.func != Func::Count)
    {
        return None;
    }
    let exact = plan
        .fields
        .iter()
        .all(|p| matches!(p.value, Operand::Int(_)) && p.op != CompareOp::Ne);
    let on_index = group.series.iter().all(|s| {
        let f = s.index_field();
        plan.fields.iter().all(|p| f == Some(p.field.name()))
    });
    if !(exact && on_index) {
        return None;
    }
    index_range(&plan.fields, group.series.first()?.index_field())
}

/// [`bucket`] of a count-only plan over `range` of the indexed field.
fn counted_bucket(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (t0, t1): (u64, u64),
    (lo, hi): (u64, u64),
    access: &mut Access,
) -> Result<(u64, Vec<Answer>)> {
    let mut n = 0u64;
    for s in &group.series {
        let c = snap.count_matching(s.id, t0, t1, lo, hi, access.mode)?;
        n += c.count;
        access.chunks_read += c.chunks_read;
    }
    if n == 0 {
        return Ok((0, Vec::new()));
    }
    Ok((
        n,
        plan.calls.iter().map(|_| (Cell::UInt(n), None)).collect(),
    ))
}

/// Answers every call of `plan` for `group` over `[t0, t1]` µs: the number
/// of points that matched and each call's value and selected time.
fn bucket(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (t0, t1): (u64, u64),
    limits: &Limits,
    access: &mut Access,
) -> Result<(u64, Vec<Answer>)> {
    limits.check()?;
    if let Some(range) = counted_range(plan, group) {
        return counted_bucket(snap, plan, group, (t0, t1), range, access);
    }
    if !access.all_indexes() {
        return Err(mode_unsupported(access));
    }
    let fast: Vec<bool> = plan.calls.iter().map(|c| indexed(c, group, plan)).collect();
    let mut out: Vec<Option<(Cell, Option<u64>)>> = vec![None; plan.calls.len()];
    let mut points = 0u64;
    if fast.iter().any(|f| !f) || !plan.fields.is_empty() || group.filtered() {
        let mut accs: Vec<Acc> = plan.calls.iter().map(|_| Acc::default()).collect();
        let mut ticker = Ticker::new(limits);
        for s in &group.series {
            let mut visit = |ts: u64, bytes: &[u8]| {
                if !ticker.tick() {
                    return;
                }
                for p in &plan.fields {
                    if !p.matches(&p.field, bytes) {
                        return;
                    }
                }
                if !s.passes(bytes) {
                    return;
                }
                points += 1;
                for (k, c) in plan.calls.iter().enumerate() {
                    if fast[k] {
                        continue;
                    }
                    if let Some(v) = c.field.read(bytes) {
                        accs[k].add(c.func, v, ts);
                    } else if c.func == Func::Count && c.field.read_str(bytes).is_some() {
                        // count() is the one function of string fields.
                        accs[k].count += 1;
                    }
                }
            };
            match index_range(&plan.fields, s.index_field()) {
                Some((lo, hi)) => {
                    let st = snap.range_scan(s.id, t0, t1, lo, hi, |ts, _, b| visit(ts, b))?;
                    access.chunks_read += st.chunks_read;
                }
                None => {
                    let st = snap.scan(s.id, t0, t1, &mut visit)?;
                    access.chunks_read += st.chunks_read;
                }
            }
        }
        ticker.result()?;
        for (k, acc) in accs.into_iter().enumerate() {
            if !fast[k] {
                out[k] = Some(acc.finish(plan.calls[k].func));
            }
        }
    } else {
        return indexed_bucket(snap, plan, group, (t0, t1));
    }
    if points == 0 {
        return Ok((0, Vec::new()));
    }
    for (k, c) in plan.calls.iter().enumerate() {
        if fast[k] {
            out[k] = Some(indexed_call(snap, c, group, (t0, t1), plan.selector_time)?);
        }
    }
    Ok((
        points,
        out.into_iter()
            .map(|o| o.unwrap_or((Cell::Null, None)))
            .collect(),
    ))
}

/// Runs an aggregate plan.
pub fn execute(
    snap: &Snapshot,
    plan: &AggregatePlan,
    limits: &Limits,
    access: &mut Access,
) -> Result<StatementResult> {
    let mut result = StatementResult::default();
    let columns = column_names(plan);
    let mut total_rows = 0usize;
    for group in &plan.groups {
        let Some(window) = plan.time.to_us() else {
            continue;
        };
        let rows = match plan.interval_us {
            None => whole_window_rows(snap, plan, group, window, limits, access)?,
            Some(iv) => match interval_rows(snap, plan, group, window, iv, limits, access)? {
                Some(rows) => rows,
                None => continue,
            },
        };
        let series = SeriesResult {
            name: plan.measurement.clone(),
            tags: group.tags.clone(),
            columns: columns.clone(),
            values: page(rows, plan.descending, plan.offset, plan.limit),
        };
        add_series(&mut result, &mut total_rows, limits, series)?;
    }
    Ok(result)
}

/// The result's columns: `time`, then the outputs if the plan has them,
/// else one per call.
fn column_names(plan: &AggregatePlan) -> Vec<String> {
    let mut columns = vec!["time".to_string()];
    match &plan.outputs {
        Some(outs) => columns.extend(outs.iter().map(|(n, _)| n.clone())),
        None => columns.extend(plan.calls.iter().map(|c| c.column.clone())),
    }
    columns
}

/// Rows of `group` without time buckets over `[t0, t1]` µs: none when no
/// point matched, else one, timed at the selected point (one selector
/// alone) or at the window's lower bound.
fn whole_window_rows(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (t0, t1): (u64, u64),
    limits: &Limits,
    access: &mut Access,
) -> Result<Vec<Vec<Cell>>> {
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let (points, cells) = bucket(snap, plan, group, (t0, t1), limits, access)?;
    if points > 0 {
        let time = match (plan.selector_time, cells.first()) {
            (true, Some((Cell::Null, _))) => None,
            (true, Some((_, Some(t)))) => Some(i128::from(*t) * 1000),
            _ => Some(plan.time.lo_ns.unwrap_or(0)),
        };
        if let Some(time) = time {
            let mut row = vec![Cell::Time(time)];
            row.extend(cells.into_iter().map(|(c, _)| c));
            rows.push(row);
        }
    }
    if let Some(outs) = &plan.outputs {
        rows = outputs(outs, rows);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests;
