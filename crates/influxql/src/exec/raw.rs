//! Executing raw selects: records of the group's series in time order
//! (ties: series in tag order), field predicates applied, at most
//! LIMIT + OFFSET rows kept per series while scanning.

use std::collections::VecDeque;

use loom::Snapshot;

use crate::error::Result;
use crate::exec::limits::{Limits, Ticker};
use crate::exec::page::{add_series, page};
use crate::plan::{index_range, Column, RawPlan, Series};
use crate::result::{Cell, SeriesResult, StatementResult};

/// Rows of one series: `(µs, series position, cells after time)`.
type Row = (u64, usize, Vec<Cell>);

fn cells(plan: &RawPlan, s: &Series, bytes: &[u8]) -> Vec<Cell> {
    plan.columns
        .iter()
        .map(|(_, c)| match c {
            Column::Field(f) => match s.schema.field(&f.name) {
                Some(d) if !d.ty.is_numeric() => d
                    .read_str(bytes)
                    .map_or(Cell::Null, |v| Cell::Str(v.to_string())),
                Some(d) => d.read(bytes).map_or(Cell::Null, Cell::from),
                None => Cell::Null,
            },
            Column::Tag(k) => s
                .schema
                .tag(k)
                .map_or(Cell::Null, |v| Cell::Str(v.to_string())),
        })
        .collect()
}

fn scan_series(
    snap: &Snapshot,
    plan: &RawPlan,
    s: &Series,
    pos: usize,
    (t0, t1): (u64, u64),
    keep: Option<usize>,
    limits: &Limits,
) -> Result<VecDeque<Row>> {
    let mut rows: VecDeque<Row> = VecDeque::new();
    let mut ticker = Ticker::new(limits);
    let mut too_many = false;
    let mut visit = |ts: u64, bytes: &[u8]| {
        if !ticker.tick() || too_many {
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
        match keep {
            // Ascending: the first `k` rows are all that can be shown.
            Some(k) if !plan.descending && rows.len() >= k => {}
            Some(k) => {
                if rows.len() >= k {
                    rows.pop_front();
                }
                if k > 0 {
                    rows.push_back((ts, pos, cells(plan, s, bytes)));
                }
            }
            None => {
                rows.push_back((ts, pos, cells(plan, s, bytes)));
                too_many = rows.len() > limits.max_rows;
            }
        }
    };
    match index_range(&plan.fields, s.index_field()) {
        Some((lo, hi)) => snap.range_scan(s.id, t0, t1, lo, hi, |ts, _, b| visit(ts, b))?,
        None => snap.scan(s.id, t0, t1, &mut visit)?,
    };
    ticker.result()?;
    if too_many {
        limits.rows(limits.max_rows + 1)?;
    }
    Ok(rows)
}

/// Runs a raw plan.
pub fn execute(snap: &Snapshot, plan: &RawPlan, limits: &Limits) -> Result<StatementResult> {
    let mut result = StatementResult::default();
    let Some(window) = plan.time.to_us() else {
        return Ok(result);
    };
    let mut columns = vec!["time".to_string()];
    columns.extend(plan.columns.iter().map(|(n, _)| n.clone()));
    let offset = usize::try_from(plan.offset).unwrap_or(usize::MAX);
    let keep = plan.limit.map(|l| {
        usize::try_from(l)
            .unwrap_or(usize::MAX)
            .saturating_add(offset)
    });
    let mut total = 0usize;
    for group in &plan.groups {
        let mut rows: Vec<Row> = Vec::new();
        for (pos, s) in group.series.iter().enumerate() {
            limits.check()?;
            rows.extend(scan_series(snap, plan, s, pos, window, keep, limits)?);
            if keep.is_none() {
                limits.rows(total + rows.len())?;
            }
        }
        rows.sort_by_key(|r| (r.0, r.1));
        let values: Vec<Vec<Cell>> = rows
            .into_iter()
            .map(|(ts, _, c)| {
                let mut row = Vec::with_capacity(c.len() + 1);
                row.push(Cell::Time(i128::from(ts) * 1000));
                row.extend(c);
                row
            })
            .collect();
        let series = SeriesResult {
            name: plan.measurement.clone(),
            tags: group.tags.clone(),
            columns: columns.clone(),
            values: page(values, plan.descending, plan.offset, plan.limit),
        };
        add_series(&mut result, &mut total, limits, series)?;
    }
    Ok(result)
}
