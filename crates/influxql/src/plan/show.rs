//! Planning `SHOW …`: only checks that a named measurement exists.

use crate::error::{Error, Result};
use crate::parse::{Ident, ShowStatement};
use crate::plan::{Catalog, ShowPlan};

fn measurement(from: &Option<Ident>, catalog: &Catalog) -> Result<Option<String>> {
    match from {
        None => Ok(None),
        Some(m) if catalog.measurements.contains_key(m.as_str()) => Ok(Some(m.0.clone())),
        Some(m) => Err(Error::Plan(format!("measurement not found: {m}"))),
    }
}

/// Plans a SHOW statement.
pub fn plan_show(s: &ShowStatement, catalog: &Catalog) -> Result<ShowPlan> {
    Ok(match s {
        ShowStatement::Databases => ShowPlan::Databases,
        ShowStatement::Measurements { limit } => ShowPlan::Measurements(*limit),
        ShowStatement::TagKeys { from } => ShowPlan::TagKeys(measurement(from, catalog)?),
        ShowStatement::TagValues { from, key } => {
            ShowPlan::TagValues(measurement(from, catalog)?, key.0.clone())
        }
        ShowStatement::FieldKeys { from } => ShowPlan::FieldKeys(measurement(from, catalog)?),
    })
}
