//! The last step of every SELECT: a series' rows put in output order and
//! cut to OFFSET/LIMIT, and the statement held to its row limit.

use crate::error::Result;
use crate::exec::limits::Limits;
use crate::result::{Cell, SeriesResult, StatementResult};

/// ORDER BY time DESC (rows arrive ascending), then OFFSET and LIMIT.
pub fn page(
    mut rows: Vec<Vec<Cell>>,
    descending: bool,
    offset: u64,
    limit: Option<u64>,
) -> Vec<Vec<Cell>> {
    if descending {
        rows.reverse();
    }
    rows.into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX)))
        .collect()
}

/// Adds `series` unless it has no rows (InfluxDB leaves empty series out),
/// counting its rows into the statement's `total` against the row limit.
pub fn add_series(
    result: &mut StatementResult,
    total: &mut usize,
    limits: &Limits,
    series: SeriesResult,
) -> Result<()> {
    if series.values.is_empty() {
        return Ok(());
    }
    *total += series.values.len();
    limits.rows(*total)?;
    result.series.push(series);
    Ok(())
}
