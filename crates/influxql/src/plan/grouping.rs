//! Planning a SELECT's `GROUP BY` (time buckets and tag keys) and its
//! `fill()`, checked against the catalog.

use crate::error::{Error, Result};
use crate::parse::{Dimension, Fill, Literal};
use crate::plan::{Catalog, FillPlan};
use crate::result::Cell;

/// A SELECT's `GROUP BY`, resolved.
pub(super) struct GroupBy {
    /// `GROUP BY time(…)` bucket width in µs.
    pub(super) interval_us: Option<u64>,
    /// Buckets start this far (µs, in `[0, interval)`) past multiples of
    /// the interval.
    pub(super) bucket_offset_us: u64,
    /// Tag keys the series are grouped by, sorted, each once.
    pub(super) tag_keys: Vec<String>,
}

/// Resolves `dims` against `measurement`'s tag keys; errors on a time
/// interval or offset not in whole microseconds, a second `time()`, or an
/// unknown tag key.
pub(super) fn group_by(
    dims: &[Dimension],
    catalog: &Catalog,
    measurement: &str,
) -> Result<GroupBy> {
    let mut interval_us = None;
    let mut bucket_offset_us = 0u64;
    let mut tag_keys: Vec<String> = Vec::new();
    for d in dims {
        match d {
            Dimension::Time { interval, offset } => {
                if interval.0 <= 0 || interval.0 % 1000 != 0 {
                    return Err(Error::Unsupported(format!(
                        "GROUP BY time({interval}): intervals must be positive whole microseconds"
                    )));
                }
                if interval_us.replace(interval.0 as u64 / 1000).is_some() {
                    return Err(Error::Plan("GROUP BY time() appears twice".into()));
                }
                if let Some(o) = offset {
                    if o.0 % 1000 != 0 {
                        return Err(Error::Unsupported(format!(
                            "GROUP BY time({interval}, {o}): offsets must be whole microseconds"
                        )));
                    }
                    // As InfluxDB: the offset modulo the interval, never negative.
                    bucket_offset_us = (o.0 / 1000).rem_euclid(interval.0 / 1000) as u64;
                }
            }
            Dimension::Tag(t) => {
                if !catalog.is_tag(measurement, t.as_str()) {
                    return Err(Error::Plan(format!(
                        "GROUP BY {t}: not a tag key of measurement {measurement}"
                    )));
                }
                tag_keys.push(t.0.clone());
            }
            Dimension::Regex(r) => {
                let p = crate::plan::Pattern::compile(r)?;
                tag_keys.extend(
                    catalog
                        .tag_keys(measurement)
                        .into_iter()
                        .filter(|k| p.is_match(k)),
                );
            }
            Dimension::Wildcard => {
                // Every tag key of the measurement, as InfluxDB expands `*`.
                tag_keys.extend(catalog.tag_keys(measurement));
            }
        }
    }
    tag_keys.sort();
    tag_keys.dedup();
    Ok(GroupBy {
        interval_us,
        bucket_offset_us,
        tag_keys,
    })
}

/// How empty buckets are filled (`null` when the statement says nothing);
/// errors on a `fill()` value that is not a number.
pub(super) fn fill_plan(fill: Option<&Fill>) -> Result<FillPlan> {
    Ok(match fill {
        None | Some(Fill::Null) => FillPlan::Null,
        Some(Fill::None) => FillPlan::None,
        Some(Fill::Previous) => FillPlan::Previous,
        Some(Fill::Linear) => FillPlan::Linear,
        Some(Fill::Value(Literal::Integer(v))) => match i64::try_from(*v) {
            Ok(v) => FillPlan::Value(Cell::Int(v)),
            Err(_) => FillPlan::Value(Cell::Float(*v as f64)),
        },
        Some(Fill::Value(Literal::Float(v))) => FillPlan::Value(Cell::Float(*v)),
        Some(Fill::Value(v)) => {
            return Err(Error::Plan(format!(
                "fill({v}): a number, null, none, previous or linear"
            )))
        }
    })
}
