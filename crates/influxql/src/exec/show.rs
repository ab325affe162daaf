//! Executing SHOW statements from the catalog.

use crate::plan::{Catalog, ShowPlan};
use crate::result::{Cell, SeriesResult, StatementResult};

/// The database name Loom answers to (any `db=` is accepted).
pub const DATABASE: &str = "loom";

fn one(name: &str, columns: &[&str], values: Vec<Vec<Cell>>) -> SeriesResult {
    SeriesResult {
        name: name.to_string(),
        tags: Vec::new(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        values,
    }
}

/// Runs a SHOW plan.
pub fn execute(catalog: &Catalog, plan: &ShowPlan) -> StatementResult {
    let measurements = |from: &Option<String>| -> Vec<String> {
        match from {
            Some(m) => vec![m.clone()],
            None => catalog.measurements.keys().cloned().collect(),
        }
    };
    let mut series = Vec::new();
    match plan {
        ShowPlan::Databases => series.push(one(
            "databases",
            &["name"],
            vec![vec![Cell::Str(DATABASE.into())]],
        )),
        ShowPlan::Measurements(limit) => {
            if !catalog.measurements.is_empty() && *limit != Some(0) {
                series.push(one(
                    "measurements",
                    &["name"],
                    catalog
                        .measurements
                        .keys()
                        .take(limit.map_or(usize::MAX, |l| l as usize))
                        .map(|m| vec![Cell::Str(m.clone())])
                        .collect(),
                ));
            }
        }
        ShowPlan::TagKeys(from) => {
            for m in measurements(from) {
                let keys = catalog.tag_keys(&m);
                if !keys.is_empty() {
                    series.push(one(
                        &m,
                        &["tagKey"],
                        keys.into_iter().map(|k| vec![Cell::Str(k)]).collect(),
                    ));
                }
            }
        }
        ShowPlan::TagValues(from, key) => {
            for m in measurements(from) {
                let mut vals: Vec<String> = catalog
                    .measurements
                    .get(&m)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.schema.tag(key).map(str::to_string))
                    .collect();
                vals.sort();
                vals.dedup();
                if !vals.is_empty() {
                    series.push(one(
                        &m,
                        &["key", "value"],
                        vals.into_iter()
                            .map(|v| vec![Cell::Str(key.clone()), Cell::Str(v)])
                            .collect(),
                    ));
                }
            }
        }
        ShowPlan::FieldKeys(from) => {
            for m in measurements(from) {
                let rows: Vec<Vec<Cell>> = catalog
                    .field_names(&m)
                    .into_iter()
                    .filter_map(|f| catalog.field(&m, &f))
                    .map(|d| {
                        let ty = match d.ty {
                            loom::FieldType::F64 => "float",
                            loom::FieldType::String => "string",
                            _ => "integer",
                        };
                        vec![Cell::Str(d.name.into_owned()), Cell::Str(ty.into())]
                    })
                    .collect();
                if !rows.is_empty() {
                    series.push(one(&m, &["fieldKey", "fieldType"], rows));
                }
            }
        }
    }
    StatementResult { series }
}
