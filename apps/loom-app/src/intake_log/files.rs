//! The log's files: their names, the writer thread's open files, and
//! recycling done ones.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::blank::Blanks;
use super::{FileNo, FILE_BYTES, MAX_SPARES};

pub(super) fn file_name(dir: &Path, n: FileNo) -> PathBuf {
    dir.join(format!("intake-{n:010}.log"))
}

pub(super) fn spare_name(dir: &Path, n: FileNo) -> PathBuf {
    dir.join(format!("spare-{n:010}.log"))
}

/// The numbers of the files named `<prefix><n>.log` in `dir`, ascending.
pub(super) fn numbered(dir: &Path, prefix: &str) -> anyhow::Result<Vec<FileNo>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let e = e.with_context(|| format!("listing {}", dir.display()))?;
        let name = e.file_name();
        if let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix(prefix))
            .and_then(|s| s.strip_suffix(".log"))
            .and_then(|s| s.parse().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub(super) fn file_numbers(dir: &Path) -> anyhow::Result<Vec<FileNo>> {
    numbered(dir, "intake-")
}

/// An open log file and where its next entry goes.
struct Open {
    file: File,
    at: u64,
}

/// Open files of the writer thread, and the done files kept for reuse.
pub(super) struct Files<'a> {
    dir: &'a Path,
    open: BTreeMap<FileNo, Open>,
    /// Numbers of the `spare-<n>.log` files, oldest first.
    spares: Vec<FileNo>,
    /// A file name appeared since the last sync (created or recycled).
    named: bool,
    /// Blank files made ahead, from the first file on: a loom-app that
    /// never takes OTLP or `/write` makes none.
    blanks: Option<Blanks>,
    blanks_tried: bool,
}

impl<'a> Files<'a> {
    /// The writer's files in `dir`, with the spares an earlier run left.
    pub(super) fn new(dir: &'a Path, spares: Vec<FileNo>) -> Files<'a> {
        Files {
            dir,
            open: BTreeMap::new(),
            spares,
            named: false,
            blanks: None,
            blanks_tried: false,
        }
    }

    /// File `n`, a recycled spare renamed to it when there is one.
    fn get(&mut self, n: FileNo) -> std::io::Result<&mut Open> {
        if !self.open.contains_key(&n) {
            let path = file_name(self.dir, n);
            if !std::mem::replace(&mut self.blanks_tried, true) {
                self.blanks = Blanks::start(self.dir)
                    .inspect_err(|e| {
                        log::warn!("intake log: {e:#}; new files are created as needed");
                    })
                    .ok();
            }
            let reused = match self.spares.pop() {
                Some(spare) => Some(spare_name(self.dir, spare)),
                None => self.blanks.as_ref().and_then(Blanks::take),
            };
            if let Some(from) = reused {
                if let Err(e) = std::fs::rename(&from, &path) {
                    log::warn!("cannot reuse {} for the intake log: {e}", from.display());
                }
            }
            // Not `append`: entries go at the position tracked here, over a
            // recycled file's old bytes, and a failed write is overwritten by
            // the next entry.
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)?;
            self.named = true;
            self.open.insert(n, Open { file, at: 0 });
        }
        Ok(self.open.get_mut(&n).expect("inserted above"))
    }

    /// Writes `entry` at file `n`'s position; on failure the position stays,
    /// so the next entry replaces whatever part of it was written.
    pub(super) fn append(&mut self, n: FileNo, entry: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let o = self.get(n)?;
        o.file.write_all_at(entry, o.at)?;
        o.at += entry.len() as u64;
        Ok(())
    }

    pub(super) fn sync(&mut self, touched: &[FileNo]) -> std::io::Result<()> {
        for n in touched {
            if let Some(o) = self.open.get(n) {
                o.file.sync_data()?;
            }
        }
        if std::mem::take(&mut self.named) {
            // A new or recycled file's name must survive a crash too.
            File::open(self.dir)?.sync_all()?;
        }
        Ok(())
    }

    /// Retires a done file: kept as a spare when it is full size and there
    /// is room, deleted otherwise. No sync: after a crash, a done file that
    /// is back under its old name only holds records the store has.
    pub(super) fn retire(&mut self, n: FileNo) {
        // Only files this thread wrote: their entries carry file numbers.
        let full = self.open.remove(&n).is_some_and(|o| o.at >= FILE_BYTES);
        let path = file_name(self.dir, n);
        if full && self.spares.len() < MAX_SPARES {
            match std::fs::rename(&path, spare_name(self.dir, n)) {
                Ok(()) => {
                    self.spares.push(n);
                    return;
                }
                Err(e) => log::warn!("cannot keep {} as a spare: {e}", path.display()),
            }
        }
        if let Err(e) = std::fs::remove_file(&path) {
            log::warn!("cannot delete {}: {e}", path.display());
        }
    }
}
