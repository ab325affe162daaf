//! Planning `SHOW …`: names a measurement must exist, and applies the
//! statement's filters (`WITH MEASUREMENT`, `WITH KEY`, tag `WHERE`
//! conditions) to the catalog, so execution only lists what remains.

use crate::error::{Error, Result};
use crate::parse::show::KeySelector;
use crate::parse::{Condition, Ident, Literal, ShowStatement};
use crate::plan::pattern::Pattern;
use crate::plan::{Catalog, Filters, Series, ShowPlan};

fn measurement(from: &Option<Ident>, catalog: &Catalog) -> Result<Option<String>> {
    match from {
        None => Ok(None),
        Some(m) if catalog.measurements.contains_key(m.as_str()) => Ok(Some(m.0.clone())),
        Some(m) => Err(Error::Plan(format!("measurement not found: {m}"))),
    }
}

/// The measurements in scope (one, or all, sorted) with their series that
/// meet `condition` (tag conditions only; time is refused).
fn selected<'a>(
    catalog: &'a Catalog,
    from: Option<String>,
    condition: Option<&Condition>,
) -> Result<Vec<(String, Vec<&'a Series>)>> {
    let names: Vec<String> = match from {
        Some(m) => vec![m],
        None => catalog.measurements.keys().cloned().collect(),
    };
    let mut out = Vec::new();
    for m in names {
        let filters = Filters::plan(condition, catalog, &m, 0)?;
        if filters.time != Default::default() {
            return Err(Error::Unsupported(
                "time conditions in SHOW … WHERE (Loom's SHOW lists every series)".into(),
            ));
        }
        if !filters.fields.is_empty() || filters.trees_have_fields() {
            return Err(Error::Unsupported(
                "field conditions in SHOW … WHERE (tag conditions only)".into(),
            ));
        }
        let series: Vec<&Series> = catalog
            .measurements
            .get(&m)
            .into_iter()
            .flatten()
            .filter(|s| filters.series_match(&s.schema))
            .collect();
        out.push((m, series));
    }
    Ok(out)
}

/// `m,k=v,…` with line protocol's escaping, as InfluxDB prints series keys.
fn series_key(s: &Series) -> String {
    let esc = |t: &str, measurement: bool| {
        let mut o = String::with_capacity(t.len());
        for c in t.chars() {
            if c == ',' || c == ' ' || (!measurement && c == '=') {
                o.push('\\');
            }
            o.push(c);
        }
        o
    };
    let mut k = esc(&s.schema.measurement, true);
    for (t, v) in &s.schema.tags {
        k.push(',');
        k.push_str(&esc(t, false));
        k.push('=');
        k.push_str(&esc(v, false));
    }
    k
}

fn limited<T>(mut v: Vec<T>, limit: Option<u64>) -> Vec<T> {
    if let Some(n) = limit {
        v.truncate(usize::try_from(n).unwrap_or(usize::MAX));
    }
    v
}

/// Whether a name (of a measurement or tag key) is listed.
type NameTest = Box<dyn Fn(&str) -> bool>;

/// Plans a SHOW statement.
pub fn plan_show(s: &ShowStatement, catalog: &Catalog) -> Result<ShowPlan> {
    Ok(match s {
        ShowStatement::Databases => ShowPlan::Databases,
        ShowStatement::RetentionPolicies { .. } => ShowPlan::RetentionPolicies,
        ShowStatement::Measurements {
            with,
            condition,
            limit,
        } => {
            let test = measurement_test(with.as_ref())?;
            let names = selected(catalog, None, condition.as_ref())?
                .into_iter()
                .filter(|(m, series)| test(m) && !series.is_empty())
                .map(|(m, _)| m)
                .collect();
            ShowPlan::Measurements(limited(names, *limit))
        }
        ShowStatement::Series {
            from,
            condition,
            limit,
        } => {
            let from = measurement(from, catalog)?;
            let mut keys: Vec<String> = selected(catalog, from, condition.as_ref())?
                .into_iter()
                .flat_map(|(_, series)| series.into_iter().map(series_key))
                .collect();
            keys.sort();
            keys.dedup();
            ShowPlan::Series(limited(keys, *limit))
        }
        ShowStatement::TagKeys { from, condition } => {
            let from = measurement(from, catalog)?;
            ShowPlan::TagKeys(tag_keys(selected(catalog, from, condition.as_ref())?))
        }
        ShowStatement::TagValues {
            from,
            key,
            condition,
            limit,
        } => {
            let from = measurement(from, catalog)?;
            let test = key_test(key)?;
            let selected = selected(catalog, from, condition.as_ref())?;
            ShowPlan::TagValues(tag_values(selected, &test, *limit))
        }
        ShowStatement::FieldKeys { from } => ShowPlan::FieldKeys(measurement(from, catalog)?),
    })
}

/// Which measurement names `WITH MEASUREMENT` keeps (all without one).
fn measurement_test(with: Option<&(bool, Literal)>) -> Result<NameTest> {
    Ok(match with {
        None => Box::new(|_| true),
        Some((equal, Literal::Regex(r))) => {
            let p = Pattern::compile(r)?;
            let equal = *equal;
            Box::new(move |m| p.is_match(m) == equal)
        }
        Some((equal, l)) => {
            let name = match l {
                Literal::String(s) => s.clone(),
                l => l.to_string(),
            };
            let equal = *equal;
            Box::new(move |m| (m == name) == equal)
        }
    })
}

/// Each measurement's tag keys over its `selected` series, sorted, each
/// once; measurements without any are left out.
fn tag_keys(selected: Vec<(String, Vec<&Series>)>) -> Vec<(String, Vec<String>)> {
    selected
        .into_iter()
        .map(|(m, series)| {
            let mut keys: Vec<String> = series
                .iter()
                .flat_map(|s| s.schema.tags.iter().map(|(k, _)| k.clone()))
                .collect();
            keys.sort();
            keys.dedup();
            (m, keys)
        })
        .filter(|(_, keys)| !keys.is_empty())
        .collect()
}

/// Which tag keys `WITH KEY` keeps.
fn key_test(key: &KeySelector) -> Result<NameTest> {
    Ok(match key {
        KeySelector::Equal(k) => {
            let k = k.0.clone();
            Box::new(move |t| t == k)
        }
        KeySelector::NotEqual(k) => {
            let k = k.0.clone();
            Box::new(move |t| t != k)
        }
        KeySelector::In(keys) => {
            let keys: Vec<String> = keys.iter().map(|k| k.0.clone()).collect();
            Box::new(move |t| keys.iter().any(|k| k == t))
        }
        KeySelector::Regex(r) => {
            let p = Pattern::compile(r)?;
            Box::new(move |t| p.is_match(t))
        }
        KeySelector::NotRegex(r) => {
            let p = Pattern::compile(r)?;
            Box::new(move |t| !p.is_match(t))
        }
    })
}

/// Each measurement's (key, value) pairs over its `selected` series whose
/// key passes `test`, sorted, each once, at most `limit` per measurement;
/// measurements without any are left out.
fn tag_values(
    selected: Vec<(String, Vec<&Series>)>,
    test: &dyn Fn(&str) -> bool,
    limit: Option<u64>,
) -> Vec<(String, Vec<(String, String)>)> {
    selected
        .into_iter()
        .map(|(m, series)| {
            let mut pairs: Vec<(String, String)> = series
                .iter()
                .flat_map(|s| s.schema.tags.iter())
                .filter(|(k, _)| test(k))
                .cloned()
                .collect();
            pairs.sort();
            pairs.dedup();
            (m, limited(pairs, limit))
        })
        .filter(|(_, pairs)| !pairs.is_empty())
        .collect()
}
