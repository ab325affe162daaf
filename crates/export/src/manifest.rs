//! The per-exporter manifest kept in the target beside the files:
//! `_loom_export/<exporter>.json`, rewritten (atomically) after every
//! complete file. It holds the log position below which every record is
//! exported and, while a batch is under way, the batch's log range and the
//! partitions already written, so a restarted exporter (after a crash or a
//! SIGKILL) redoes exactly the rest of that batch: no record twice, none
//! skipped.
//!
//! Open chunks: a source's records not sealed into a chunk yet (durable in
//! the store's journal of open chunks) have no log position. They are
//! exported by a *tail batch* and the manifest keeps, per source, a
//! [`Mark`]: the last such record exported, as its place among the
//! source's records after the position. When the chunk seals (at a log
//! address at or above the position), its records up to the mark are
//! skipped, and the mark is dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::layout::escape;
use crate::target::Target;

/// Manifest format version.
const VERSION: u32 = 1;

/// A record's place among one source's records after the position: its
/// time and its rank (from 1) among those records with that time. A
/// source's records are in time order (a record older than its source's
/// newest is refused, never stored), so this names one record whether it
/// is read from the open chunk or, later, from the chunk it sealed into.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Mark {
    /// The record's time.
    pub ts: u64,
    /// Its rank among the records with time `ts`, from 1.
    pub rank: u64,
}

impl Mark {
    /// The mark of the record after the one `self` names, at time `ts`
    /// (starting from `Mark::default()` for a source's first record).
    pub fn next(self, ts: u64) -> Mark {
        if ts == self.ts && self.rank > 0 {
            Mark {
                ts,
                rank: self.rank + 1,
            }
        } else {
            Mark { ts, rank: 1 }
        }
    }
}

/// A tail batch: each source's open-chunk records after its mark in the
/// manifest, up to the mark given here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailBatch {
    /// Which tail batch this is (file names differ from every other's).
    pub number: u64,
    /// Source id → the mark of its last record this batch exports.
    pub upto: BTreeMap<u64, Mark>,
}

/// A batch under way: records in chunks at log addresses `[from, to)`, or
/// with `tail`, records of open chunks (`from == to`, the position).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// First log position of the batch (the committed position).
    pub from: u64,
    /// End of the batch (exclusive).
    pub to: u64,
    /// Partition directories whose file of this batch is written.
    pub done: Vec<String>,
    /// Set for a tail batch.
    #[serde(default)]
    pub tail: Option<TailBatch>,
}

/// What an exporter has exported so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version.
    pub version: u32,
    /// Who exports (the host name unless given).
    pub exporter: String,
    /// Every record in a chunk at a log address below this is exported.
    pub position: u64,
    /// The batch under way, if any.
    pub pending: Option<Pending>,
    /// Source id → the last record of its open chunk exported (see the
    /// module's doc); gone once that chunk sealed and was exported.
    #[serde(default)]
    pub tails: BTreeMap<u64, Mark>,
    /// Tail batches committed, over the manifest's life.
    #[serde(default)]
    pub tail_batches: u64,
    /// Records exported, over the manifest's life.
    pub records_exported: u64,
    /// Files written, over the manifest's life.
    pub files_written: u64,
    /// Parquet bytes written, over the manifest's life.
    pub bytes_written: u64,
    /// Records retention dropped before they were exported (counted where
    /// the exporter had seen them: see `Exporter::export`).
    pub records_lost_to_retention: u64,
    /// Log bytes retention dropped above the position, with records the
    /// exporter never saw (a store exported only now and then).
    pub log_bytes_lost_to_retention: u64,
}

/// Where the manifest of `exporter` lives in the target.
pub fn location(exporter: &str) -> String {
    format!("_loom_export/{}.json", escape(exporter))
}

impl Manifest {
    /// The manifest of `exporter` in `target`, a fresh one if none exists.
    pub fn load(target: &Target, exporter: &str) -> Result<Manifest> {
        let loc = location(exporter);
        let Some(bytes) = target.get(&loc)? else {
            return Ok(Manifest {
                version: VERSION,
                exporter: exporter.to_string(),
                ..Manifest::default()
            });
        };
        let bad = |reason: String| Error::Manifest {
            location: loc.clone(),
            target: target.url().to_string(),
            reason,
        };
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if m.version != VERSION {
            return Err(bad(format!(
                "version {} (this build reads {VERSION})",
                m.version
            )));
        }
        if m.exporter != exporter {
            return Err(bad(format!("belongs to exporter {:?}", m.exporter)));
        }
        Ok(m)
    }

    /// Writes the manifest (atomically replacing the previous one).
    pub fn save(&self, target: &Target) -> Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::Manifest {
            location: location(&self.exporter),
            target: target.url().to_string(),
            reason: e.to_string(),
        })?;
        target.put(&location(&self.exporter), json.into())
    }
}
