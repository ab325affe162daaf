//! Exporting a Loom store's records as Parquet files in a hive layout, to a
//! local directory or an S3-compatible object store, so that engines users
//! already run (DataFusion, Spark, DuckDB, Trino, ...) answer fleet-wide
//! questions over every host's records.
//!
//! - Only durable records are exported (`loom::Reader::durable_snapshot`),
//!   read through the engine's public read API by log position
//!   (`loom::Snapshot::scan_log`): a position, not a time, so records
//!   stored late are not skipped.
//! - One file per measurement, host, UTC hour and export batch
//!   ([`layout`]); schema = the data model ([`file`](mod@file)).
//! - Exactly once: a manifest per exporter in the target, rewritten after
//!   every complete file ([`manifest`]); a restarted export resumes from it.
//! - [`continuous::run`] exports every interval from its own thread.

pub mod continuous;
mod error;
mod exporter;
pub mod file;
pub mod layout;
pub mod manifest;
mod series;
mod target;

pub use error::{Error, Result};
pub use exporter::{Backlog, ExportConfig, Exporter, Round};
pub use target::Target;

/// This machine's host name (the default `host` of exported series), or
/// `localhost` when the system does not say.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
