//! `GROUP BY time(…)`: a group's window cut into time buckets, each
//! answered on its own (or all counted by one scan), then filled and
//! turned into output columns.

use super::*;

/// A bucket's start (ns) and cells, `None` when no point matched (what
/// [`fill`] takes).
type Bucket = (i128, Option<Vec<Cell>>);

/// Rows of `group` in `GROUP BY time(iv)` buckets over `[t0, t1]` µs, only
/// those of buckets from the one holding `t0` on; `None` when the group has
/// no series result (no record to start from, or an empty window).
pub(super) fn interval_rows(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (mut t0, t1): (u64, u64),
    iv: u64,
    limits: &Limits,
    access: &mut Access,
) -> Result<Option<Vec<Vec<Cell>>>> {
    if plan.time.lo_ns.is_none() {
        // No lower bound: start at the group's first record.
        let first = group
            .series
            .iter()
            .filter_map(|s| snap.time_span(s.id).map(|(a, _)| a))
            .min();
        match first {
            Some(f) => t0 = t0.max(f),
            None => return Ok(None),
        }
    }
    if t0 > t1 {
        return Ok(None);
    }
    // Buckets start `offset` past multiples of the interval; the
    // first is the one holding t0 (it may start before the epoch).
    let (t0i, t1i, ivi) = (i128::from(t0), i128::from(t1), i128::from(iv));
    let off = i128::from(plan.bucket_offset_us);
    let start = t0i - (t0i - off).rem_euclid(ivi);
    // Transformations need buckets before the window (InfluxDB
    // extends the range by them, then shows only the window).
    // Capped so the product below cannot overflow; the row limit
    // refuses such a range anyway.
    let lead = if plan.time.lo_ns.is_some() {
        i128::from(plan.lead_buckets.min(1 << 32))
    } else {
        0
    };
    let first = start - lead * ivi;
    let n_buckets = (t1i - first) / ivi + 1;
    limits.rows(usize::try_from(n_buckets).unwrap_or(usize::MAX))?;
    let (any, buckets) = bucket_cells(
        snap,
        plan,
        group,
        (first, start, t0i, t1i, ivi),
        limits,
        access,
    )?;
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    if any {
        rows = fill(&plan.fill, &plan.calls, buckets);
    }
    if let Some(outs) = &plan.outputs {
        rows = outputs(outs, rows);
    }
    rows.retain(|r| !matches!(r.first(), Some(Cell::Time(t)) if *t < start * 1000));
    Ok(Some(rows))
}

/// Every bucket's start (ns) and cells (`None` when no point matched), for
/// buckets from `first` (µs) every `iv` up to `t1`, and whether any bucket
/// from `start` on (those shown) matched a point. Buckets before `start`
/// (lead buckets) count whole, the others only records within `[t0, t1]`.
fn bucket_cells(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (first, start, t0i, t1i, ivi): (i128, i128, i128, i128, i128),
    limits: &Limits,
    access: &mut Access,
) -> Result<(bool, Vec<Bucket>)> {
    let mut any = false;
    let counted = counts_by_scan(
        snap,
        plan,
        group,
        (first, start, t0i, t1i, ivi),
        limits,
        access,
    )?;
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut starts = Vec::new();
    let mut b = first;
    while b <= t1i {
        starts.push(b);
        b += ivi;
    }
    if let Some(counts) = &counted {
        for (k, &b) in starts.iter().enumerate() {
            let n = counts.get(k).copied().unwrap_or(0);
            any |= n > 0 && b >= start;
            let cells = (n > 0).then(|| plan.calls.iter().map(|_| Cell::UInt(n)).collect());
            buckets.push((b * 1000, cells));
        }
        return Ok((any, buckets));
    }
    let windows: Vec<Option<(u64, u64)>> = starts
        .iter()
        .map(|&b| {
            let lo = if b < start { b } else { b.max(t0i) }.max(0);
            let hi = (b + ivi - 1).min(t1i);
            (hi >= 0).then_some((lo as u64, hi as u64))
        })
        .collect();
    let answers = answer_buckets(snap, plan, group, &windows, limits, access)?;
    for (&b, (points, cells)) in starts.iter().zip(answers) {
        any |= points > 0 && b >= start;
        let cells = (points > 0).then(|| cells.into_iter().map(|(c, _)| c).collect());
        buckets.push((b * 1000, cells));
    }
    Ok((any, buckets))
}

/// Records per time bucket when every call is a plain `count()` and the
/// buckets are small next to the chunks: then one scan of each series over
/// the window (a few decodes per record) beats one time-index lookup per
/// bucket, each of which decodes the bucket's chunk from its start. `None`
/// when the per-bucket path is as cheap (few records per bucket's chunk
/// share) or the plan is not count-only. Buckets start at `first` (µs),
/// every `iv`; those before `start` (lead buckets) count whole, the others
/// only records within `[t0, t1]`, as [`bucket`] windows them.
fn counts_by_scan(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    (first, start, t0, t1, iv): (i128, i128, i128, i128, i128),
    limits: &Limits,
    access: &Access,
) -> Result<Option<Vec<u64>>> {
    /// Records a chunk holds, roughly: below this many per bucket, the
    /// per-bucket lookups decode more than one scan does.
    const SCAN_BELOW_PER_BUCKET: u64 = 1000;
    let count_only = plan.fields.is_empty()
        && !group.filtered()
        && access.all_indexes()
        && !plan.calls.is_empty()
        && plan.calls.iter().all(|c| c.func == Func::Count);
    if !count_only || t1 < 0 {
        return Ok(None);
    }
    let n_buckets = ((t1 - first) / iv + 1) as u64;
    let (lo, hi) = (first.min(t0).max(0) as u64, t1 as u64);
    let kept = |ts: i128| ts < start || ts >= t0;
    let mut total = 0;
    for s in &group.series {
        total += snap.count(s.id, lo, hi)?;
    }
    if total >= n_buckets.saturating_mul(SCAN_BELOW_PER_BUCKET) {
        return Ok(None);
    }
    let mut counts = vec![0u64; n_buckets as usize];
    let mut ticker = Ticker::new(limits);
    for s in &group.series {
        snap.scan(s.id, lo, hi, |ts, _| {
            let ts = i128::from(ts);
            if ticker.tick() && kept(ts) {
                if let Some(c) = counts.get_mut(((ts - first) / iv) as usize) {
                    *c += 1;
                }
            }
        })?;
    }
    ticker.result()?;
    Ok(Some(counts))
}
