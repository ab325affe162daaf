//! Planning `SELECT f(col), … FROM (SELECT …) [WHERE time …] [GROUP BY time(…), tags]`:
//! aggregates of a subquery's rows. As in InfluxDB, the outer time range
//! also bounds the subquery; the outer statement groups by tags the
//! subquery's series carry (its own GROUP BY tags).

use crate::error::{Error, Result};
use crate::parse::{CallArg, Dimension, Expr, Fill, Literal, Projected, SelectStatement};
use crate::plan::{Catalog, FillPlan, Filters, Func, Plan, TimeBounds};
use crate::result::Cell;

/// One outer function: of which subquery column, named how.
#[derive(Debug, Clone)]
pub struct OuterCall {
    /// The function.
    pub func: Func,
    /// The subquery's column it reads.
    pub input: String,
    /// The output column.
    pub column: String,
}

/// Aggregates over a subquery's rows.
#[derive(Debug, Clone)]
pub struct SubqueryPlan {
    /// The subquery (an aggregate or raw plan), its time range narrowed to
    /// the outer one.
    pub inner: Plan,
    /// The outer time range, ns.
    pub time: TimeBounds,
    /// `GROUP BY time(…)`: bucket width and offset, ns.
    pub interval_ns: Option<(i128, i128)>,
    /// Outer GROUP BY tag keys.
    pub keys: Vec<String>,
    /// What empty buckets show.
    pub fill: FillPlan,
    /// The functions.
    pub calls: Vec<OuterCall>,
    /// One selector alone without time buckets: its point's time is shown.
    pub selector_time: bool,
    /// ORDER BY time DESC.
    pub descending: bool,
    /// Rows per series.
    pub limit: Option<u64>,
    /// Rows skipped per series.
    pub offset: u64,
}

fn func(name: &str, args: &[CallArg]) -> Result<(Func, String)> {
    let f = match name {
        "count" => Func::Count,
        "sum" => Func::Sum,
        "min" => Func::Min,
        "max" => Func::Max,
        "mean" => Func::Mean,
        "first" => Func::First,
        "last" => Func::Last,
        "spread" => Func::Spread,
        "stddev" => Func::Stddev,
        "median" => Func::Median,
        "mode" => Func::Mode,
        "percentile" => Func::Percentile(0.0),
        other => return Err(Error::Unsupported(format!("{other}() over a subquery"))),
    };
    let input = match args.first() {
        Some(CallArg::Expr(Expr::Identifier(c))) => c.0.clone(),
        _ => {
            return Err(Error::Plan(format!(
                "{name}() over a subquery needs one of its columns"
            )))
        }
    };
    let f = match (f, args.get(1)) {
        (Func::Percentile(_), Some(CallArg::Expr(Expr::Literal(Literal::Integer(n))))) => {
            Func::Percentile(*n as f64)
        }
        (Func::Percentile(_), Some(CallArg::Expr(Expr::Literal(Literal::Float(n))))) => {
            Func::Percentile(*n)
        }
        (Func::Percentile(_), _) => {
            return Err(Error::Plan("percentile() needs a number N".into()))
        }
        (f, None) => f,
        (_, Some(_)) => {
            return Err(Error::Plan(format!("{name}() takes one argument")));
        }
    };
    Ok((f, input))
}

/// Narrows a plan's time range to `outer` (the subquery sees no more).
fn narrow(plan: &mut Plan, outer: TimeBounds) {
    let t = match plan {
        Plan::Aggregate(p) => &mut p.time,
        Plan::Raw(p) => &mut p.time,
        Plan::Top(p) => &mut p.time,
        _ => return,
    };
    if let Some(lo) = outer.lo_ns {
        t.lo_ns = Some(t.lo_ns.map_or(lo, |x| x.max(lo)));
    }
    if let Some(hi) = outer.hi_ns {
        t.hi_ns = Some(t.hi_ns.map_or(hi, |x| x.min(hi)));
    }
}

/// Plans `s`, whose source is `inner`.
pub fn plan_subquery(
    s: &SelectStatement,
    inner: &SelectStatement,
    catalog: &Catalog,
    now_ns: i128,
) -> Result<Plan> {
    let crate::parse::Source::Measurement(m) = &inner.from else {
        return Err(Error::Unsupported("subqueries within subqueries".into()));
    };
    let filters = Filters::plan(s.condition.as_ref(), catalog, m.name.as_str(), now_ns)?;
    if !(filters.tags.is_empty() && filters.trees.is_empty() && filters.fields.is_empty()) {
        return Err(Error::Unsupported(
            "conditions other than time on a subquery's rows".into(),
        ));
    }
    let mut inner_plan = crate::plan::select::plan_select(inner, catalog, now_ns)?;
    narrow(&mut inner_plan, filters.time);
    let mut interval_ns = None;
    let mut keys = Vec::new();
    for d in &s.group_by {
        match d {
            Dimension::Time { interval, offset } => {
                if interval.0 <= 0 {
                    return Err(Error::Plan(
                        "GROUP BY time() needs a positive interval".into(),
                    ));
                }
                let iv = i128::from(interval.0);
                let off = offset.map_or(0, |o| i128::from(o.0).rem_euclid(iv));
                interval_ns = Some((iv, off));
            }
            Dimension::Tag(t) => keys.push(t.0.clone()),
            _ => {
                return Err(Error::Unsupported(
                    "GROUP BY * or /regex/ over a subquery".into(),
                ))
            }
        }
    }
    let mut calls = Vec::new();
    let mut taken = std::collections::BTreeMap::new();
    for p in &s.fields {
        let Projected::Call { name, args } = &p.expr else {
            return Err(Error::Unsupported(format!(
                "{} over a subquery (functions of its columns are served)",
                p.expr
            )));
        };
        let (f, input) = func(name, args)?;
        let base = p.alias.as_ref().map_or(name.as_str(), |a| a.as_str());
        let n = taken.entry(base.to_string()).or_insert(0u32);
        let column = if *n == 0 {
            base.to_string()
        } else {
            format!("{base}_{n}")
        };
        *n += 1;
        calls.push(OuterCall {
            func: f,
            input,
            column,
        });
    }
    let fill = match &s.fill {
        None | Some(Fill::Null) => FillPlan::Null,
        Some(Fill::None) => FillPlan::None,
        Some(Fill::Previous) => FillPlan::Previous,
        Some(Fill::Linear) => FillPlan::Linear,
        Some(Fill::Value(Literal::Integer(v))) => {
            FillPlan::Value(i64::try_from(*v).map_or(Cell::Float(*v as f64), Cell::Int))
        }
        Some(Fill::Value(Literal::Float(v))) => FillPlan::Value(Cell::Float(*v)),
        Some(Fill::Value(v)) => return Err(Error::Plan(format!("fill({v}) needs a number"))),
    };
    let mut time = filters.time;
    if interval_ns.is_some() && time.hi_ns.is_none() {
        time.hi_ns = Some(now_ns);
    }
    let selector_time = interval_ns.is_none() && calls.len() == 1 && calls[0].func.is_selector();
    Ok(Plan::Subquery(Box::new(SubqueryPlan {
        inner: inner_plan,
        time,
        interval_ns,
        keys,
        fill,
        calls,
        selector_time,
        descending: s.descending.unwrap_or(false),
        limit: s.limit,
        offset: s.offset.unwrap_or(0),
    })))
}
