//! Plans → results on one consistent snapshot.

pub mod access;
pub mod aggregate;
pub mod distinct;
pub mod limits;
pub mod page;
pub mod rank;
pub mod raw;
pub mod show;
pub mod subquery;
pub mod top;
pub mod value;

use loom::Snapshot;

pub use access::Access;
pub use limits::Limits;
pub use rank::influx_rank;

use crate::error::{Error, Result};
use crate::plan::{Catalog, Func, Plan};
use crate::result::StatementResult;

/// Runs `plan` on `snap` within `limits`, through `access` (see
/// [`Access`]: only counts with a condition on the indexed field run under
/// a mode other than `TimeRange`).
pub fn execute(
    snap: &Snapshot,
    catalog: &Catalog,
    plan: &Plan,
    limits: &Limits,
    access: &mut Access,
) -> Result<StatementResult> {
    if !access.all_indexes() && !matches!(plan, Plan::Aggregate(_) | Plan::Nothing) {
        return Err(mode_unsupported(access));
    }
    match plan {
        Plan::Show(p) => Ok(show::execute(catalog, p)),
        Plan::Aggregate(p) if p.calls.first().is_some_and(|c| c.func == Func::Distinct) => {
            distinct::execute(snap, p, limits)
        }
        Plan::Aggregate(p) => aggregate::execute(snap, p, limits, access),
        Plan::Raw(p) => raw::execute(snap, p, limits),
        Plan::Top(p) => top::execute(snap, p, limits),
        Plan::Subquery(p) => subquery::execute(snap, catalog, p, limits, access),
        Plan::Nothing => Ok(StatementResult::default()),
    }
}

/// The refusal of a statement that `access.mode` cannot answer.
pub(crate) fn mode_unsupported(access: &Access) -> Error {
    Error::Unsupported(format!(
        "index mode {:?}: only count() with an integer bound on the indexed field runs without both indexes",
        access.mode
    ))
}
