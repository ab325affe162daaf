//! Loom: a single-writer append-and-index store for high-frequency telemetry.
//!
//! One writer thread appends records `(source, timestamp_us, bytes)`; any
//! number of reader threads answer exact questions over time windows while
//! ingest continues:
//!
//! - records of one source are packed into chunks with a compact
//!   delta-encoded header (about 2 bytes per small record);
//! - each sealed chunk gets a directory entry (its time span: the time index)
//!   and, when the source declares a range index, one summary per non-empty
//!   value bin (count, sum, min, max: the range index);
//! - chunks go into in-memory blocks; a flusher thread writes full blocks to
//!   segment files, so the writer never waits for disk while memory lasts;
//! - `sync` publishes a snapshot to readers without I/O; `persist` makes
//!   everything durable; opening a directory recovers every valid chunk,
//!   skipping (and reporting) corrupt ones, cutting only a torn tail;
//! - sources may be declared with a [`SourceSchema`] (measurement, tags,
//!   fields at byte offsets, strings after the fixed part, range index on a
//!   field): the schema is stored in
//!   the store's catalog and range summaries beside the segments, so another
//!   process opens the store (also read-only, while a writer holds it) and
//!   answers every question without declaring anything;
//! - one writer per directory (a lock naming the holder's pid); retention
//!   drops the oldest segments by size or age.
//!
//! ```no_run
//! use loom::{Config, RangeIndexSpec, SourceId};
//! fn latency(b: &[u8]) -> u64 {
//!     b.get(..8).map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
//! }
//! # fn main() -> loom::Result<()> {
//! let (mut w, r) = loom::open(std::path::Path::new("/tmp/store"), Config::default())?;
//! let h = w.declare_source(SourceId(1), Some(RangeIndexSpec {
//!     extractor: latency, min: 0, interval: 10, n_bins: 100 }))?;
//! w.push(h, 1_000, &42u64.to_le_bytes())?;
//! w.sync();
//! let p = r.percentile(SourceId(1), 0, 2_000, 0.9999)?;
//! # Ok(()) }
//! ```

mod bin_summary;
mod config;
mod error;
#[cfg(feature = "fuzz")]
pub mod fuzz;
mod gate;
mod index;
mod late;
mod log;
mod priority;
mod query;
mod reader;
mod record_builder;
mod schema;
mod snapshot;
mod source;
mod storage;
mod writer;

pub use config::{Config, FlushMode};
pub use error::{Error, Result};
pub use gate::{Admission, ConnectionGate};
pub use late::{late_sibling_id, late_siblings, MAX_LATE_GENERATIONS};
/// The chunk encoder, current and reference, for `make encode-bench`.
#[doc(hidden)]
pub use log::codec::bench as codec_bench;
pub use priority::lower_thread_priority;
pub use query::percentile_rank as nearest_rank;
pub use query::rank_chunks_decoded;
pub use query::{Aggregate, CountResult, Extremes, IndexMode, ScanStats, WindowBins};
pub use reader::Reader;
pub use record_builder::{fixed_len, RecordBuilder};
pub use schema::{find_field, FieldDef, FieldType, IndexDef, SourceSchema, Value};
pub use snapshot::{IndexHeld, IndexMemory, Snapshot, StorageUse};
pub use source::{Extractor, RangeIndexSpec, RecordAddress, SourceHandle, SourceId};
pub use storage::recovery::RecoveryReport;
pub use writer::{open, open_read_only, Writer, WriterStats};
