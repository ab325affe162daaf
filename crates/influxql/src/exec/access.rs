//! How the executor reaches records, and how much it read.
//!
//! Normally every index is used (`IndexMode::TimeRange`). The paper's
//! ablation asks one statement — a count of records whose indexed field
//! passes a bound — four ways: without any index, with the time index only,
//! with the range index only, and with both. loom-app's ablation questions
//! run that statement through this crate with the mode set; other statements
//! need both indexes and are refused under another mode rather than
//! answered some other way than asked.

use loom::IndexMode;

/// Index use and what was read.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    /// Which indexes counts with a condition on the indexed field may use.
    pub mode: IndexMode,
    /// Sealed chunks read by the statements run so far (scans and counts;
    /// answers taken from summaries alone read none).
    pub chunks_read: u64,
}

impl Default for Access {
    fn default() -> Self {
        Access::with_mode(IndexMode::TimeRange)
    }
}

impl Access {
    /// Access through `mode`, nothing read yet.
    pub fn with_mode(mode: IndexMode) -> Self {
        Access {
            mode,
            chunks_read: 0,
        }
    }

    /// Whether every index may be used.
    pub fn all_indexes(&self) -> bool {
        self.mode == IndexMode::TimeRange
    }
}
