//! Planning `SELECT`: classify projections (aggregates or raw fields),
//! resolve names against the catalog, group series, fix the time window.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::parse::{CallArg, Dimension, Expr, Fill, Literal, Projected, SelectStatement};
use crate::plan::{
    AggregatePlan, Call, Catalog, Column, Filters, Func, Group, Plan, RawPlan, Series,
};

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
        if !filters.tags.iter().all(|p| p.holds(s.schema.tag(&p.key))) {
            continue;
        }
        let key = keys
            .iter()
            .map(|k| (k.clone(), s.schema.tag(k).unwrap_or("").to_string()))
            .collect();
        out.entry(key).or_default().push(s.clone());
    }
    out.into_iter()
        .map(|(tags, series)| Group { tags, series })
        .collect()
}

/// Plans a SELECT statement.
pub fn plan_select(s: &SelectStatement, catalog: &Catalog, now_ns: i128) -> Result<Plan> {
    let measurement = s.from.name.0.clone();
    if !catalog.measurements.contains_key(&measurement) {
        return Ok(Plan::Nothing);
    }
    let filters = Filters::plan(s.condition.as_ref(), catalog, &measurement, now_ns)?;
    let mut interval_us = None;
    let mut tag_keys = Vec::new();
    for d in &s.group_by {
        match d {
            Dimension::Time {
                offset: Some(_), ..
            } => return Err(Error::Unsupported("GROUP BY time() with an offset".into())),
            Dimension::Time { interval, .. } => {
                if interval.0 <= 0 || interval.0 % 1000 != 0 {
                    return Err(Error::Unsupported(format!(
                        "GROUP BY time({interval}): intervals must be positive whole microseconds"
                    )));
                }
                if interval_us.replace(interval.0 as u64 / 1000).is_some() {
                    return Err(Error::Plan("GROUP BY time() appears twice".into()));
                }
            }
            Dimension::Tag(t) => {
                if !catalog.is_tag(&measurement, t.as_str()) {
                    return Err(Error::Plan(format!(
                        "GROUP BY {t}: not a tag key of measurement {measurement}"
                    )));
                }
                tag_keys.push(t.0.clone());
            }
            Dimension::Wildcard => return Err(Error::Unsupported("GROUP BY *".into())),
        }
    }
    let fill_name = match &s.fill {
        None | Some(Fill::Null) | Some(Fill::None) => None,
        Some(Fill::Previous) => Some("fill(previous)".to_string()),
        Some(Fill::Linear) => Some("fill(linear)".to_string()),
        Some(Fill::Value(v)) => Some(format!("fill({v})")),
    };
    if let Some(f) = fill_name {
        return Err(Error::Unsupported(f));
    }
    let groups = groups(catalog, &measurement, &filters, &tag_keys);
    let calls: Vec<_> = s
        .fields
        .iter()
        .filter(|p| matches!(p.expr, Projected::Call { .. }))
        .collect();
    let descending = s.descending.unwrap_or(false);
    let offset = s.offset.unwrap_or(0);
    let is_top = |p: &&crate::parse::Projection| matches!(&p.expr, Projected::Call { name, .. } if name == "top");
    if let Some(top) = calls.iter().copied().find(is_top) {
        if s.fields.len() != 1 {
            return Err(Error::Plan(
                "selector function top() cannot be combined with other functions or fields".into(),
            ));
        }
        if interval_us.is_some() {
            return Err(Error::Unsupported("top() with GROUP BY time()".into()));
        }
        let Projected::Call { args, .. } = &top.expr else {
            return Err(Error::Plan("top() needs a field and a count".into()));
        };
        if args.len() != 2 {
            return Err(Error::Unsupported(
                "top() with other than two arguments (field, N)".into(),
            ));
        }
        let (_, field) = plan_call("max", &args[..1], catalog, &measurement)?;
        let n = match &args[1] {
            CallArg::Expr(Expr::Literal(Literal::Integer(n))) if *n >= 1 => *n as u64,
            _ => {
                return Err(Error::Plan(
                    "top() needs a positive integer N as its last argument".into(),
                ))
            }
        };
        let column = top
            .alias
            .as_ref()
            .map_or("top".to_string(), |a| a.0.clone());
        return Ok(Plan::Top(crate::plan::TopPlan {
            measurement,
            groups,
            time: filters.time,
            field,
            n,
            column,
            fields: filters.fields,
            descending,
            limit: s.limit,
            offset,
        }));
    }
    if !calls.is_empty() {
        if calls.len() != s.fields.len() {
            return Err(Error::Plan(
                "mixing aggregate and non-aggregate queries is not supported".into(),
            ));
        }
        let mut taken = BTreeMap::new();
        let mut out = Vec::new();
        for p in &s.fields {
            let Projected::Call { name, args } = &p.expr else {
                continue;
            };
            let (func, field) = plan_call(name, args, catalog, &measurement)?;
            let column = unique_column(
                p.alias.as_ref().map_or(name.as_str(), |a| a.as_str()),
                &mut taken,
            );
            out.push(Call {
                func,
                field,
                column,
            });
        }
        let mut time = filters.time;
        if interval_us.is_some() && time.hi_ns.is_none() {
            // InfluxDB ends GROUP BY time() windows at now() by default.
            time.hi_ns = Some(now_ns);
        }
        let selector_time = interval_us.is_none() && out.len() == 1 && out[0].func.is_selector();
        return Ok(Plan::Aggregate(AggregatePlan {
            measurement,
            groups,
            time,
            interval_us,
            fill_none: matches!(s.fill, Some(Fill::None)),
            calls: out,
            fields: filters.fields,
            selector_time,
            descending,
            limit: s.limit,
            offset,
        }));
    }
    if interval_us.is_some() {
        return Err(Error::Plan(
            "GROUP BY requires at least one aggregate function".into(),
        ));
    }
    let mut columns: Vec<(String, Column)> = Vec::new();
    let mut taken = BTreeMap::new();
    for p in &s.fields {
        match &p.expr {
            Projected::Wildcard => {
                let mut all: Vec<(String, Column)> = catalog
                    .field_names(&measurement)
                    .into_iter()
                    .filter_map(|f| {
                        catalog
                            .field(&measurement, &f)
                            .map(|d| (f.clone(), Column::Field(d)))
                    })
                    .chain(
                        catalog
                            .tag_keys(&measurement)
                            .into_iter()
                            .filter(|k| !tag_keys.contains(k))
                            .map(|k| (k.clone(), Column::Tag(k))),
                    )
                    .collect();
                all.sort_by(|a, b| a.0.cmp(&b.0));
                for (name, c) in all {
                    columns.push((unique_column(&name, &mut taken), c));
                }
            }
            Projected::Identifier(id) if id.as_str() == "time" => {}
            Projected::Identifier(id) => {
                let c = if let Some(d) = catalog.field(&measurement, id.as_str()) {
                    Column::Field(d)
                } else if catalog.is_tag(&measurement, id.as_str()) {
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
        }
    }
    if !columns.iter().any(|(_, c)| matches!(c, Column::Field(_))) {
        return Err(Error::Plan(
            "at least one non-time field must be queried".into(),
        ));
    }
    Ok(Plan::Raw(RawPlan {
        measurement,
        groups,
        time: filters.time,
        columns,
        fields: filters.fields,
        descending,
        limit: s.limit,
        offset,
    }))
}
