//! Executing SHOW statements from the catalog.

use crate::plan::{Catalog, ShowPlan};
use crate::result::{Cell, SeriesResult, StatementResult};

/// The database name Loom answers to (any `db=` is accepted).
pub const DATABASE: &str = "loom";
/// The retention policy Loom reports (retention is the store's, by size or age).
pub const RETENTION_POLICY: &str = "autogen";

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
        // FIELD KEYS lists every measurement when FROM is absent.
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
        ShowPlan::RetentionPolicies => series.push(SeriesResult {
            name: String::new(),
            tags: Vec::new(),
            columns: [
                "name",
                "duration",
                "shardGroupDuration",
                "replicaN",
                "default",
            ]
            .iter()
            .map(|c| c.to_string())
            .collect(),
            values: vec![vec![
                Cell::Str(RETENTION_POLICY.into()),
                Cell::Str("0s".into()),
                Cell::Str("168h0m0s".into()),
                Cell::UInt(1),
                Cell::Bool(true),
            ]],
        }),
        ShowPlan::Measurements(names) => {
            if !names.is_empty() {
                series.push(one(
                    "measurements",
                    &["name"],
                    names.iter().map(|m| vec![Cell::Str(m.clone())]).collect(),
                ));
            }
        }
        ShowPlan::Series(keys) => {
            if !keys.is_empty() {
                series.push(one(
                    "",
                    &["key"],
                    keys.iter().map(|k| vec![Cell::Str(k.clone())]).collect(),
                ));
            }
        }
        ShowPlan::TagKeys(per) => {
            for (m, keys) in per {
                series.push(one(
                    m,
                    &["tagKey"],
                    keys.iter().map(|k| vec![Cell::Str(k.clone())]).collect(),
                ));
            }
        }
        ShowPlan::TagValues(per) => {
            for (m, pairs) in per {
                series.push(one(
                    m,
                    &["key", "value"],
                    pairs
                        .iter()
                        .map(|(k, v)| vec![Cell::Str(k.clone()), Cell::Str(v.clone())])
                        .collect(),
                ));
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
