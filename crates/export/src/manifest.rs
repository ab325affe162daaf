//! The per-exporter manifest kept in the target beside the files:
//! `_loom_export/<exporter>.json`, rewritten (atomically) after every
//! complete file. It holds the log position below which every record is
//! exported and, while a batch is under way, the batch's log range and the
//! partitions already written, so a restarted exporter (after a crash or a
//! SIGKILL) redoes exactly the rest of that batch: no record twice, none
//! skipped.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::layout::escape;
use crate::target::Target;

/// Manifest format version.
const VERSION: u32 = 1;

/// A batch under way: records in chunks at log addresses `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// First log position of the batch (the committed position).
    pub from: u64,
    /// End of the batch (exclusive).
    pub to: u64,
    /// Partition directories whose file of this batch is written.
    pub done: Vec<String>,
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
