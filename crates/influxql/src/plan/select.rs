//! Planning `SELECT`: classify projections (aggregates or raw fields),
//! resolve names against the catalog, group series, fix the time window.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::parse::{CallArg, Expr, Literal, Projected, SelectStatement};
use crate::plan::grouping::{fill_plan, group_by, GroupBy};
use crate::plan::{
    AggregatePlan, Call, Catalog, Column, FillPlan, Filters, Func, Group, Out, Plan, RawPlan,
    Series, Transform,
};
use crate::result::Cell;

fn unique_column(name: &str, taken: &mut BTreeMap<String, u32>) -> String {
    // InfluxDB names repeated columns max, max_1, max_2, …
    let n = taken.entry(name.to_string()).or_insert(0);
    let out = if *n == 0 {
        name.to_string()
    } else {
        format!("{name}_{n}")
    };
    *n += 1;
    out
}

fn plan_call(
    name: &str,
    args: &[CallArg],
    catalog: &Catalog,
    measurement: &str,
) -> Result<(Func, loom::FieldDef)> {
    let func = match name {
        "count" => Func::Count,
        "sum" => Func::Sum,
        "min" => Func::Min,
        "max" => Func::Max,
        "mean" => Func::Mean,
        "percentile" => Func::Percentile(0.0),
        "first" => Func::First,
        "last" => Func::Last,
        "spread" => Func::Spread,
        "stddev" => Func::Stddev,
        "median" => Func::Median,
        "mode" => Func::Mode,
        other => return Err(Error::Unsupported(format!("the function {other}()"))),
    };
    let want = if matches!(func, Func::Percentile(_)) {
        2
    } else {
        1
    };
    if args.len() != want {
        return Err(Error::Plan(format!(
            "invalid number of arguments for {name}, expected {want}, got {}",
            args.len()
        )));
    }
    let field = match &args[0] {
        CallArg::Wildcard => return Err(Error::Unsupported(format!("{name}(*)"))),
        CallArg::Expr(Expr::Identifier(f)) => {
            if let Some(def) = catalog.field(measurement, f.as_str()) {
                def
            } else if catalog.is_tag(measurement, f.as_str()) || f.as_str() == "time" {
                return Err(Error::Plan(format!(
                    "{name}() needs a numeric field; {f} is not a field"
                )));
            } else {
                return Err(Error::Plan(format!(
                    "unknown field {f} in measurement {measurement}"
                )));
            }
        }
        CallArg::Expr(e) => {
            return Err(Error::Unsupported(format!(
                "{name}() of an expression ({e})"
            )))
        }
        CallArg::Call(c) => {
            return Err(Error::Unsupported(format!("{name}() of a function ({c})")))
        }
    };
    if !field.ty.is_numeric() && func != Func::Count {
        return Err(Error::Plan(format!(
            "{name}() needs a numeric field; {} is a string field (count() is the one function of strings)",
            field.name
        )));
    }
    let func = match func {
        Func::Percentile(_) => match &args[1] {
            CallArg::Expr(Expr::Literal(Literal::Integer(n))) => Func::Percentile(*n as f64),
            CallArg::Expr(Expr::Literal(Literal::Float(n))) => Func::Percentile(*n),
            _ => {
                return Err(Error::Plan(
                    "percentile() needs a number N as its second argument".into(),
                ))
            }
        },
        f => f,
    };
    Ok((func, field))
}

fn groups(catalog: &Catalog, measurement: &str, filters: &Filters, keys: &[String]) -> Vec<Group> {
    let mut out: BTreeMap<Vec<(String, String)>, Vec<Series>> = BTreeMap::new();
    for s in catalog.measurements.get(measurement).into_iter().flatten() {
        let Some(filter) = filters.residual(&s.schema) else {
            continue;
        };
        let key = keys
            .iter()
            .map(|k| (k.clone(), s.schema.tag(k).unwrap_or("").to_string()))
            .collect();
        out.entry(key).or_default().push(Series {
            filter: filter.map(std::sync::Arc::new),
            ..s.clone()
        });
    }
    out.into_iter()
        .map(|(tags, series)| Group { tags, series })
        .collect()
}

/// Whether a projection holds a function call (an aggregate statement).
/// Recursion is bounded by the parser's depth limit.
fn has_call(p: &Projected) -> bool {
    match p {
        Projected::Call { .. } => true,
        Projected::Math { first, rest } => has_call(first) || rest.iter().any(|(_, x)| has_call(x)),
        Projected::Paren(x) => has_call(x),
        _ => false,
    }
}

/// Whether the projection is one aggregate call (no arithmetic, no
/// transformation): the call's own column.
fn plain_call(p: &Projected) -> bool {
    matches!(p, Projected::Call { name, .. } if !is_transform(name))
}

fn is_transform(name: &str) -> bool {
    matches!(
        name,
        "derivative"
            | "non_negative_derivative"
            | "difference"
            | "non_negative_difference"
            | "moving_average"
            | "cumulative_sum"
            | "elapsed"
    )
}

/// InfluxDB's column name of an expression: a call's name, a field's
/// name, binary operands' names joined by `_`.
fn expr_name(p: &Projected) -> String {
    match p {
        Projected::Call { name, .. } => name.clone(),
        Projected::Identifier(i) => i.0.clone(),
        Projected::Paren(x) => expr_name(x),
        Projected::Math { first, rest } => {
            let mut n = expr_name(first);
            for (_, x) in rest {
                let m = expr_name(x);
                if !n.is_empty() && !m.is_empty() {
                    n.push('_');
                }
                n.push_str(&m);
            }
            n
        }
        _ => String::new(),
    }
}

/// Plans one aggregate call (`count(distinct(x))` included); its index.
fn aggregate_call(
    name: &str,
    args: &[CallArg],
    catalog: &Catalog,
    measurement: &str,
    calls: &mut Vec<Call>,
    alone: bool,
) -> Result<usize> {
    let (func, field) =
        match (name, args) {
            ("count", [CallArg::Call(inner)]) => match &**inner {
                Projected::Call { name: d, args } if d == "distinct" => {
                    let (_, field) = plan_call("count", args, catalog, measurement)?;
                    if !field.ty.is_numeric() {
                        return Err(Error::Unsupported(format!(
                            "count(distinct()) of string field {}",
                            field.name
                        )));
                    }
                    (Func::CountDistinct, field)
                }
                other => {
                    return Err(Error::Unsupported(format!("count() of {other}")));
                }
            },
            ("distinct", _) if !alone => return Err(Error::Unsupported(
                "distinct() with other functions or arithmetic (it gives several rows per bucket)"
                    .into(),
            )),
            ("distinct", _) => {
                let (_, field) = plan_call("count", args, catalog, measurement)?;
                if !field.ty.is_numeric() {
                    return Err(Error::Unsupported(format!(
                        "distinct() of string field {}",
                        field.name
                    )));
                }
                (Func::Distinct, field)
            }
            ("top" | "bottom", _) => {
                return Err(Error::Unsupported(format!(
                    "{name}() with other functions or arithmetic"
                )))
            }
            _ => plan_call(name, args, catalog, measurement)?,
        };
    calls.push(Call {
        func,
        field,
        column: name.to_string(),
    });
    Ok(calls.len() - 1)
}

/// A duration argument in ns (`1s`), or `default` when absent.
fn duration_arg(name: &str, a: Option<&CallArg>, default: i64) -> Result<i64> {
    match a {
        None => Ok(default),
        Some(CallArg::Expr(Expr::Literal(Literal::Duration(d)))) if d.0 > 0 => Ok(d.0),
        Some(_) => Err(Error::Plan(format!(
            "{name}() takes a positive duration as its second argument"
        ))),
    }
}

/// The output expression of a projection, its calls added to `calls`.
/// Recursion is bounded by the parser's depth limit.
fn output(
    p: &Projected,
    catalog: &Catalog,
    measurement: &str,
    calls: &mut Vec<Call>,
    alone: bool,
) -> Result<Out> {
    match p {
        Projected::Call { name, args } if is_transform(name) => {
            let Some(CallArg::Call(inner)) = args.first() else {
                return Err(Error::Unsupported(format!(
                    "{name}() of raw values; {name}(f(x)) over GROUP BY time() is served"
                )));
            };
            let Projected::Call {
                name: f,
                args: fargs,
            } = &**inner
            else {
                return Err(Error::Plan(format!("{name}() needs an aggregate inside")));
            };
            let k = aggregate_call(f, fargs, catalog, measurement, calls, false)?;
            let t = match name.as_str() {
                "derivative" | "non_negative_derivative" => Transform::Derivative {
                    unit_ns: duration_arg(name, args.get(1), 1_000_000_000)?,
                    non_negative: name.starts_with("non_negative"),
                },
                "difference" | "non_negative_difference" => Transform::Difference {
                    non_negative: name.starts_with("non_negative"),
                },
                "moving_average" => match args.get(1) {
                    Some(CallArg::Expr(Expr::Literal(Literal::Integer(n)))) if *n >= 1 => {
                        Transform::MovingAverage(usize::try_from(*n).unwrap_or(usize::MAX))
                    }
                    _ => {
                        return Err(Error::Plan(
                            "moving_average() needs a positive window size N".into(),
                        ))
                    }
                },
                "cumulative_sum" => Transform::CumulativeSum,
                _ => Transform::Elapsed(duration_arg(name, args.get(1), 1)?),
            };
            Ok(Out::Transform(t, k))
        }
        Projected::Call { name, args } => Ok(Out::Call(aggregate_call(
            name,
            args,
            catalog,
            measurement,
            calls,
            alone,
        )?)),
        Projected::Number(Literal::Integer(v)) => Ok(Out::Number(
            i64::try_from(*v).map_or(Cell::Float(*v as f64), Cell::Int),
        )),
        Projected::Number(Literal::Float(v)) => Ok(Out::Number(Cell::Float(*v))),
        Projected::Paren(x) => output(x, catalog, measurement, calls, false),
        Projected::Math { first, rest } => {
            let first = Box::new(output(first, catalog, measurement, calls, false)?);
            let rest = rest
                .iter()
                .map(|(op, x)| Ok((*op, output(x, catalog, measurement, calls, false)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok(Out::Math { first, rest })
        }
        other => Err(Error::Plan(format!(
            "mixing aggregate and non-aggregate queries is not supported ({other})"
        ))),
    }
}

/// Plans a SELECT statement.
pub fn plan_select(s: &SelectStatement, catalog: &Catalog, now_ns: i128) -> Result<Plan> {
    let measurement = match &s.from {
        crate::parse::Source::Measurement(m) => m.name.0.clone(),
        crate::parse::Source::Subquery(inner) => {
            return crate::plan::subquery::plan_subquery(s, inner, catalog, now_ns)
        }
    };
    if !catalog.measurements.contains_key(&measurement) {
        return Ok(Plan::Nothing);
    }
    let filters = Filters::plan(s.condition.as_ref(), catalog, &measurement, now_ns)?;
    let group_by = group_by(&s.group_by, catalog, &measurement)?;
    let fill = fill_plan(s.fill.as_ref())?;
    let groups = groups(catalog, &measurement, &filters, &group_by.tag_keys);
    let calls: Vec<_> = s.fields.iter().filter(|p| has_call(&p.expr)).collect();
    let sel = Selection {
        s,
        catalog,
        measurement,
        filters,
        group_by,
        groups,
    };
    let is_top = |p: &&crate::parse::Projection| matches!(&p.expr, Projected::Call { name, .. } if name == "top" || name == "bottom");
    if let Some(top) = calls.iter().copied().find(is_top) {
        return plan_top(sel, top);
    }
    if !calls.is_empty() {
        if calls.len() != s.fields.len() {
            return Err(Error::Plan(
                "mixing aggregate and non-aggregate queries is not supported".into(),
            ));
        }
        return plan_aggregate(sel, fill, now_ns);
    }
    plan_raw(sel)
}

/// What every kind of SELECT plan starts from: the statement, the
/// measurement it reads, its WHERE filters and GROUP BY, and the groups of
/// series they select.
struct Selection<'a> {
    s: &'a SelectStatement,
    catalog: &'a Catalog,
    measurement: String,
    filters: Filters,
    group_by: GroupBy,
    groups: Vec<Group>,
}

/// Plans `top(field, N)` or `bottom(field, N)`, which must be the only
/// projection, with no `GROUP BY time()`.
fn plan_top(sel: Selection<'_>, top: &crate::parse::Projection) -> Result<Plan> {
    let s = sel.s;
    let Projected::Call {
        name: top_name,
        args,
    } = &top.expr
    else {
        return Err(Error::Plan("top() needs a field and a count".into()));
    };
    if s.fields.len() != 1 {
        return Err(Error::Plan(format!(
            "selector function {top_name}() cannot be combined with other functions or fields"
        )));
    }
    if sel.group_by.interval_us.is_some() {
        return Err(Error::Unsupported(format!(
            "{top_name}() with GROUP BY time()"
        )));
    }
    if args.len() != 2 {
        return Err(Error::Unsupported(format!(
            "{top_name}() with other than two arguments (field, N)"
        )));
    }
    let (_, field) = plan_call("max", &args[..1], sel.catalog, &sel.measurement)?;
    let n = match &args[1] {
        CallArg::Expr(Expr::Literal(Literal::Integer(n))) if *n >= 1 => *n as u64,
        _ => {
            return Err(Error::Plan(format!(
                "{top_name}() needs a positive integer N as its last argument"
            )))
        }
    };
    let column = top.alias.as_ref().map_or(top_name.clone(), |a| a.0.clone());
    Ok(Plan::Top(crate::plan::TopPlan {
        measurement: sel.measurement,
        groups: sel.groups,
        time: sel.filters.time,
        field,
        n,
        column,
        fields: sel.filters.fields,
        descending: s.descending.unwrap_or(false),
        limit: s.limit,
        offset: s.offset.unwrap_or(0),
        bottom: top_name == "bottom",
    }))
}

/// Plans a SELECT whose projections are all aggregates (or arithmetic and
/// transformations of them), filling empty buckets as `fill` says;
/// `GROUP BY time()` windows end at `now_ns` unless the WHERE ends them.
fn plan_aggregate(sel: Selection<'_>, fill: FillPlan, now_ns: i128) -> Result<Plan> {
    let s = sel.s;
    let interval_us = sel.group_by.interval_us;
    let mut taken = BTreeMap::new();
    let mut out = Vec::new();
    let all_plain = s.fields.iter().all(|p| plain_call(&p.expr));
    let mut outputs = Vec::new();
    for p in &s.fields {
        let o = output(
            &p.expr,
            sel.catalog,
            &sel.measurement,
            &mut out,
            s.fields.len() == 1,
        )?;
        if matches!(o, Out::Transform(..)) && interval_us.is_none() {
            return Err(Error::Unsupported(format!(
                "{} without GROUP BY time() (transformations of raw values)",
                p.expr
            )));
        }
        let name = match &p.alias {
            Some(a) => a.0.clone(),
            None => expr_name(&p.expr),
        };
        let column = unique_column(&name, &mut taken);
        if all_plain {
            if let Out::Call(k) = o {
                out[k].column = column;
            }
        } else {
            outputs.push((column, o));
        }
    }
    let mut time = sel.filters.time;
    if interval_us.is_some() && time.hi_ns.is_none() {
        // InfluxDB ends GROUP BY time() windows at now() by default.
        time.hi_ns = Some(now_ns);
    }
    let selector_time =
        all_plain && interval_us.is_none() && out.len() == 1 && out[0].func.is_selector();
    Ok(Plan::Aggregate(AggregatePlan {
        measurement: sel.measurement,
        groups: sel.groups,
        time,
        interval_us,
        bucket_offset_us: sel.group_by.bucket_offset_us,
        fill,
        lead_buckets: lead_buckets(&outputs),
        calls: out,
        outputs: (!all_plain).then_some(outputs),
        fields: sel.filters.fields,
        selector_time,
        descending: s.descending.unwrap_or(false),
        limit: s.limit,
        offset: s.offset.unwrap_or(0),
    }))
}

/// Buckets before the window the transformations among `outputs` need
/// (the most any of them needs).
fn lead_buckets(outputs: &[(String, Out)]) -> u64 {
    outputs
        .iter()
        .map(|(_, o)| match o {
            Out::Transform(Transform::MovingAverage(n), _) => *n as u64 - 1,
            Out::Transform(Transform::CumulativeSum, _) => 0,
            Out::Transform(..) => 1,
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Plans a SELECT of raw values: fields and tags by name or `*`, at least
/// one field among them; no `GROUP BY time()`.
fn plan_raw(sel: Selection<'_>) -> Result<Plan> {
    let s = sel.s;
    if sel.group_by.interval_us.is_some() {
        return Err(Error::Plan(
            "GROUP BY requires at least one aggregate function".into(),
        ));
    }
    let mut columns: Vec<(String, Column)> = Vec::new();
    let mut taken = BTreeMap::new();
    for p in &s.fields {
        match &p.expr {
            Projected::Wildcard => {
                for (name, c) in wildcard_columns(&sel) {
                    columns.push((unique_column(&name, &mut taken), c));
                }
            }
            Projected::Identifier(id) if id.as_str() == "time" => {}
            Projected::Identifier(id) => {
                let (catalog, measurement) = (sel.catalog, &sel.measurement);
                let c = if let Some(d) = catalog.field(measurement, id.as_str()) {
                    Column::Field(d)
                } else if catalog.is_tag(measurement, id.as_str()) {
                    Column::Tag(id.0.clone())
                } else {
                    return Err(Error::Plan(format!(
                        "unknown field or tag {id} in measurement {measurement}"
                    )));
                };
                let name = p.alias.as_ref().map_or(id.as_str(), |a| a.as_str());
                columns.push((unique_column(name, &mut taken), c));
            }
            Projected::Call { .. } => {}
            other => {
                return Err(Error::Unsupported(format!(
                    "arithmetic on raw values ({other}); arithmetic of aggregates is served"
                )))
            }
        }
    }
    if !columns.iter().any(|(_, c)| matches!(c, Column::Field(_))) {
        return Err(Error::Plan(
            "at least one non-time field must be queried".into(),
        ));
    }
    Ok(Plan::Raw(RawPlan {
        measurement: sel.measurement,
        groups: sel.groups,
        time: sel.filters.time,
        columns,
        fields: sel.filters.fields,
        descending: s.descending.unwrap_or(false),
        limit: s.limit,
        offset: s.offset.unwrap_or(0),
    }))
}

/// The columns `*` stands for: every field and every tag not grouped by,
/// sorted by name.
fn wildcard_columns(sel: &Selection<'_>) -> Vec<(String, Column)> {
    let (catalog, measurement) = (sel.catalog, &sel.measurement);
    let mut all: Vec<(String, Column)> = catalog
        .field_names(measurement)
        .into_iter()
        .filter_map(|f| {
            catalog
                .field(measurement, &f)
                .map(|d| (f.clone(), Column::Field(d)))
        })
        .chain(
            catalog
                .tag_keys(measurement)
                .into_iter()
                .filter(|k| !sel.group_by.tag_keys.contains(k))
                .map(|k| (k.clone(), Column::Tag(k))),
        )
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}
