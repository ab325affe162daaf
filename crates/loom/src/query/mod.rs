//! Exact queries over a time window `[t0, t1]`, inclusive at both ends, in
//! the unit of the pushed timestamps. A window with `t0 > t1` is empty.
//!
//! Chunks wholly inside the window are answered from their bin summaries
//! where the query allows it; chunks cut by the window edges and the
//! unsealed tail are scanned record by record.

mod ablation;
mod aggregate;
mod edge;
mod log_scan;
pub(crate) mod percentile;
mod range_scan;
mod rank_bin;
mod window;

pub use ablation::{CountResult, IndexMode};
pub use aggregate::Aggregate;
pub use percentile::nearest_rank as percentile_rank;
pub use percentile::rank_chunks_decoded;
pub use window::{Extremes, WindowBins};

/// How much work a scanning query did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Sealed chunks read (from memory or disk).
    pub chunks_read: u64,
    /// Records decoded, in chunks and in the unsealed tail.
    pub records_scanned: u64,
    /// Records passed to the callback.
    pub records_matched: u64,
}
