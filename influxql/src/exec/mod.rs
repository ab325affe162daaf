//! Plans → results on one consistent snapshot.

pub mod aggregate;
pub mod limits;
pub mod rank;
pub mod raw;
pub mod show;
pub mod top;
pub mod value;

use loom::Snapshot;

pub use limits::Limits;
pub use rank::influx_rank;

use crate::error::Result;
use crate::plan::{Catalog, Plan};
use crate::result::StatementResult;

/// Runs `plan` on `snap` within `limits`.
pub fn execute(
    snap: &Snapshot,
    catalog: &Catalog,
    plan: &Plan,
    limits: &Limits,
) -> Result<StatementResult> {
    match plan {
        Plan::Show(p) => Ok(show::execute(catalog, p)),
        Plan::Aggregate(p) => aggregate::execute(snap, p, limits),
        Plan::Raw(p) => raw::execute(snap, p, limits),
        Plan::Top(p) => top::execute(snap, p, limits),
    }
}
