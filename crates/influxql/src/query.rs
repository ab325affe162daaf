//! The whole path for one query text: parse every statement, plan them all
//! (so an unsupported construct refuses the request before anything runs),
//! execute each on one snapshot.

use loom::Snapshot;

use crate::error::{Error, Result};
use crate::exec::{self, Access, Limits};
use crate::parse::parse_statements_within;
use crate::plan::{self, Catalog};
use crate::result::StatementResult;

/// Answers of a query's statements, in order. `Err` for the whole request
/// when a statement does not parse, the text is over `limits.text` or
/// nests deeper than [`MAX_DEPTH`](crate::parse::MAX_DEPTH) (all
/// [`Error::Parse`]), or a statement uses a construct outside the subset;
/// per-statement errors (unknown names, limits, storage) are inside.
pub fn run(
    snap: &Snapshot,
    text: &str,
    now_ns: i128,
    limits: &Limits,
) -> Result<Vec<Result<StatementResult>>> {
    run_with(snap, text, now_ns, limits, &mut Access::default())
}

/// [`run`] through `access`: the index mode statements may use, and the
/// chunks they read.
pub fn run_with(
    snap: &Snapshot,
    text: &str,
    now_ns: i128,
    limits: &Limits,
    access: &mut Access,
) -> Result<Vec<Result<StatementResult>>> {
    let statements = parse_statements_within(text, &limits.text)?;
    let catalog = Catalog::of(snap);
    let plans: Vec<Result<plan::Plan>> = statements
        .iter()
        .map(|s| plan::plan(s, &catalog, now_ns))
        .collect();
    if let Some(Err(e)) = plans
        .iter()
        .find(|p| matches!(p, Err(Error::Unsupported(_))))
    {
        return Err(e.clone());
    }
    Ok(plans
        .into_iter()
        .map(|p| p.and_then(|p| exec::execute(snap, &catalog, &p, limits, access)))
        .collect())
}

/// Wall-clock time in ns since the epoch: InfluxDB's `now()`.
pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}
