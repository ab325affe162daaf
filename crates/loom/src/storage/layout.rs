//! The on-disk layout: a metadata file and numbered segment files.
//!
//! The log is one address space of bytes. Segment file `k` holds addresses
//! `[k * segment_size, (k + 1) * segment_size)`; blocks never straddle
//! segments. `loom.meta` records the sizes so a store is always reopened with
//! the layout it was written with, and the store's format version: `v1`
//! stores hold uncompressed segments only; a writer that opens one rewrites
//! the first line to `v2` and writes its new segments compressed
//! (`frame.rs`), while the old ones stay readable as they are. A `v2` line
//! keeps software that knows only version 1 from misreading the store.

use std::fs;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::{Error, Result};

const META_FILE: &str = "loom.meta";
const META_HEADER: &str = "loom-store v2";
/// First line of stores written by format version 1 (uncompressed).
const META_HEADER_V1: &str = "loom-store v1";

/// Sizes that fix where bytes live on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub chunk_size: usize,
    pub block_size: usize,
    pub segment_size: u64,
}

impl Layout {
    pub(crate) fn from_config(c: &Config) -> Self {
        Layout {
            chunk_size: c.chunk_size,
            block_size: c.block_size,
            segment_size: c.segment_size,
        }
    }

    /// Segment index and offset inside it of a log address.
    pub(crate) fn locate(&self, addr: u64) -> (u64, u64) {
        (addr / self.segment_size, addr % self.segment_size)
    }

    pub(crate) fn segment_path(dir: &Path, index: u64) -> PathBuf {
        dir.join(format!("segment-{index:08}.log"))
    }

    /// Reads the layout stored in `dir`, `None` if there is none.
    pub(crate) fn load(dir: &Path) -> Result<Option<Layout>> {
        let path = dir.join(META_FILE);
        match fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text)
                .map(Some)
                .map_err(|reason| Error::Corrupted {
                    address: 0,
                    reason: format!("{}: {reason}", path.display()),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Reads the layout stored in `dir`, or stores `wanted` (durably) if
    /// there is none. A version-1 store's file is rewritten as version 2.
    pub(crate) fn load_or_store(dir: &Path, wanted: Layout) -> Result<Layout> {
        match Self::load(dir)? {
            Some(stored) => {
                let path = dir.join(META_FILE);
                let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
                if text.starts_with(META_HEADER_V1) {
                    log::info!(
                        "{}: a format-1 store: its segments stay as they are, new ones are compressed",
                        dir.display()
                    );
                    stored.store(dir)?;
                }
                if stored != wanted {
                    log::info!(
                        "{}: using the stored layout {stored:?} instead of the configured {wanted:?}",
                        dir.display()
                    );
                }
                Ok(stored)
            }
            None => {
                wanted.store(dir)?;
                Ok(wanted)
            }
        }
    }

    fn store(&self, dir: &Path) -> Result<()> {
        let text = format!(
            "{META_HEADER}\nchunk_size={}\nblock_size={}\nsegment_size={}\n",
            self.chunk_size, self.block_size, self.segment_size
        );
        crate::storage::catalog::write_durably(dir, META_FILE, text.as_bytes())
    }

    fn parse(text: &str) -> std::result::Result<Layout, String> {
        let mut lines = text.lines();
        let first = lines.next();
        if first != Some(META_HEADER) && first != Some(META_HEADER_V1) {
            return Err(format!(
                "first line is not '{META_HEADER}' (or '{META_HEADER_V1}')"
            ));
        }
        let (mut chunk, mut block, mut segment) = (None, None, None);
        for line in lines {
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("line '{line}' is not key=value"))?;
            let n: u64 = v
                .trim()
                .parse()
                .map_err(|_| format!("value of {k} is not a number: '{v}'"))?;
            match k.trim() {
                "chunk_size" => chunk = Some(n as usize),
                "block_size" => block = Some(n as usize),
                "segment_size" => segment = Some(n),
                other => return Err(format!("unknown key '{other}'")),
            }
        }
        let layout = Layout {
            chunk_size: chunk.ok_or("chunk_size missing")?,
            block_size: block.ok_or("block_size missing")?,
            segment_size: segment.ok_or("segment_size missing")?,
        };
        let c = Config {
            chunk_size: layout.chunk_size,
            block_size: layout.block_size,
            segment_size: layout.segment_size,
            ..Config::default()
        };
        c.validate().map_err(|e| e.to_string())?;
        Ok(layout)
    }
}
