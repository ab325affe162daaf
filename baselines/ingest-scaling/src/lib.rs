//! Ingest-scaling baseline (figure 14): how many records per second can one
//! telemetry source be written into Loom, LMDB, RocksDB or a plain file?
//!
//! Every run writes records of one fixed random payload whose first 8 bytes
//! are a latency-like value that varies per record ([`values`], precomputed
//! from a fixed seed) as fast as possible for a fixed duration. Each record is stamped with the current time
//! like `loom-app` stamps arrival time: a monotonic clock in µs since the run
//! started, read once per [`STAMP_EVERY`] records (loom-app likewise stamps a
//! whole received batch with one arrival time). Every store publishes what was
//! written at least once a second ([`SYNC_INTERVAL_US`]); see each module in
//! [`sink`] for what "publish" means there and which settings were chosen.
//!
//! The binary prints one progress line per second to stderr and exactly one
//! [`Summary`] line on stdout, which `figures/` and `baselines/is-table.sh` parse.

pub mod clock;
pub mod meter;
pub mod run;
pub mod sink;
pub mod storage;
pub mod summary;
pub mod values;

pub use run::{run, Db, RunConfig};
pub use summary::Summary;

/// Records written between two clock reads; they share one timestamp.
pub const STAMP_EVERY: u64 = 64;

/// Longest time (µs) between two publishes (sync / commit / flush) of a store.
pub const SYNC_INTERVAL_US: u64 = 1_000_000;
