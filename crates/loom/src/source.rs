//! Sources and their range-index declarations.

use std::fmt;

/// Stable identity of a stream of records, chosen by the caller (telemetry
/// hashes its kind and sub-key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceId(pub u64);

impl fmt::Display for SourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// The writer's dense handle to a declared source; cheap to copy, only valid
/// with the writer that returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceHandle(pub(crate) u32);

/// Where a pushed record lives: its source and its position (0-based) in that
/// source's history. `Reader::get` finds it again in memory or on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordAddress {
    /// Source of the record.
    pub source: SourceId,
    /// 0-based sequence number of the record within its source.
    pub seq: u64,
}

/// Extracts the indexed value (e.g. latency in µs) from a record's bytes. Must
/// not panic on any input: return a default for short records.
pub type Extractor = fn(&[u8]) -> u64;

/// A range index over one u64 value per record: `n_bins` bins of width
/// `interval` starting at `min`, plus one bin below `min` and one at or above
/// `min + interval * n_bins`.
#[derive(Clone, Copy)]
pub struct RangeIndexSpec {
    /// Value extractor, called once per pushed record.
    pub extractor: Extractor,
    /// Lower bound of the first regular bin.
    pub min: u64,
    /// Width of each regular bin; at least 1.
    pub interval: u64,
    /// Number of regular bins; at least 1.
    pub n_bins: u32,
}

impl fmt::Debug for RangeIndexSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RangeIndexSpec")
            .field("min", &self.min)
            .field("interval", &self.interval)
            .field("n_bins", &self.n_bins)
            .finish()
    }
}
