//! The intake log: what makes an OTLP acknowledgement durable before the
//! records reach the engine.
//!
//! OTLP records wait in the reorder window (seconds of their own time)
//! before they can be pushed in time order, and the engine persists once
//! per `--persist-interval-ms`; an exporter that is told "stored" drops its
//! copy at once. So every accepted record is first appended to this log,
//! and a request is answered only once the log is fsynced up to it (the
//! [`DurableMark`] position of its commit). One writer thread does the
//! I/O and batches every commit queued while it was syncing into one
//! `fdatasync` (group commit): the ingest thread never waits for the disk.
//!
//! Files `intake-<n>.log` in `<store>/otlp-intake/`, each a sequence of
//! entries `[magic u32][payload length u32][CRC32C u32][file number u64]
//! [payload]` (the CRC covers the file number and the payload), the payload
//! a sequence of records `[series u64][time µs u64][length u32][bytes]`
//! (little-endian). A file is done once every record in it has been pushed
//! into the engine and a persist has completed after that.
//!
//! Done files are recycled rather than deleted (up to [`MAX_SPARES`] kept
//! as `spare-<n>.log`): overwriting blocks a file already has makes
//! `fdatasync` flush data only, where an append must also commit the file's
//! new size through the filesystem journal. On this project's VMs that
//! halves the sync a one-request-at-a-time client waits for, and removes
//! its tail when other writers keep the journal busy. A recycled file still
//! holds its earlier entries after the new ones; they carry an older file
//! number, so reading stops at them. Entries of the first format (magic
//! `LOI1`, no file number) are still read.
//! At start the remaining files are read back and their records go through
//! the reorder stage again; a record whose series already holds a record
//! at its time or later in the store was stored before the crash and is
//! skipped (records are stored in time order per series, and a later one
//! than the series' newest is never refused as late: see `stage.rs`).

mod blank;
mod entry;
mod files;
#[cfg(test)]
mod tests;
mod writer;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use crossbeam_channel::Sender;
use endpoint::DurableMark;
use otlp::Shaped;

use entry::{read_file, End, HEADER};
use files::{file_name, file_numbers, numbered};

/// Done files kept for reuse; beyond this they are deleted (each holds
/// about [`FILE_BYTES`] of disk while it waits).
pub const MAX_SPARES: usize = 4;
/// A file takes new commits until it holds this many bytes.
const FILE_BYTES: u64 = 32 << 20;
/// A commit is sent to the disk at once when it grows this large, even if
/// more requests are queued.
pub const COMMIT_BYTES: usize = 4 << 20;

/// Which log file holds a record (so its deletion can wait for the record).
pub type FileNo = u64;

/// Work for the writer thread.
enum Job {
    /// Append one entry to file `file`; durable, it makes `position` durable.
    Append {
        file: FileNo,
        entry: Vec<u8>,
        position: u64,
    },
    /// Delete these files (every record in them is in the engine, persisted).
    Delete(Vec<FileNo>),
}

/// The ingest thread's side of the log.
pub struct IntakeLog {
    tx: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    mark: Arc<DurableMark>,
    /// The commit being built: an entry with its header space reserved.
    entry: Vec<u8>,
    file: FileNo,
    file_bytes: u64,
    /// Position the commit being built will make durable.
    position: u64,
    /// Per file, records not yet pushed into the engine.
    outstanding: BTreeMap<FileNo, u64>,
}

impl IntakeLog {
    /// Opens the log in `dir` (created if missing) and starts its writer
    /// thread; returns the records left from an earlier run with the file
    /// holding each, oldest first, for the caller to store.
    pub fn open(
        dir: &Path,
        mark: Arc<DurableMark>,
    ) -> anyhow::Result<(IntakeLog, Vec<(FileNo, Shaped)>)> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let numbers = file_numbers(dir)?;
        let mut left = Vec::new();
        for &n in &numbers {
            let path = file_name(dir, n);
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let mut recs = Vec::new();
            if read_file(&bytes, n, &mut recs) == End::Torn {
                log::warn!(
                    "{}: stopped at a torn or corrupt entry after {} records (a crash mid-write; those records were never acknowledged)",
                    path.display(),
                    recs.len()
                );
            }
            left.extend(recs.into_iter().map(|r| (n, r)));
        }
        let spares = numbered(dir, "spare-")?;
        // File numbers are never reused: a recycled file's earlier entries
        // must never pass for a later life's.
        let next = numbers.iter().chain(&spares).max().map_or(1, |n| n + 1);
        let (tx, rx) = crossbeam_channel::unbounded();
        let thread = {
            let (dir, mark) = (dir.to_path_buf(), mark.clone());
            std::thread::Builder::new()
                .name("intake-log".into())
                .spawn(move || writer::write_loop(&dir, spares, &rx, &mark))
                .context("starting the intake-log thread")?
        };
        let log = IntakeLog {
            tx: Some(tx),
            thread: Some(thread),
            mark,
            entry: vec![0; HEADER],
            file: next,
            file_bytes: 0,
            position: 1,
            outstanding: numbers.iter().map(|&n| (n, 0)).collect(),
        };
        Ok((log, left))
    }

    /// Adds `records` to the commit being built; returns the file they go
    /// to and the position that, durable, covers them.
    pub fn append(&mut self, records: &[Shaped]) -> (FileNo, u64) {
        for r in records {
            self.entry.extend_from_slice(&r.source.to_le_bytes());
            self.entry.extend_from_slice(&r.time_us.to_le_bytes());
            self.entry
                .extend_from_slice(&(r.bytes.len() as u32).to_le_bytes());
            self.entry.extend_from_slice(&r.bytes);
        }
        *self.outstanding.entry(self.file).or_default() += records.len() as u64;
        (self.file, self.position)
    }

    /// Counts `n` records of `file` read back at start and not yet stored.
    pub fn replayed(&mut self, file: FileNo, n: u64) {
        *self.outstanding.entry(file).or_default() += n;
    }

    /// `n` records of `file` were pushed into the engine.
    pub fn pushed(&mut self, file: FileNo, n: u64) {
        if let Some(c) = self.outstanding.get_mut(&file) {
            *c = c.saturating_sub(n);
        }
    }

    /// Bytes in the commit being built.
    pub fn pending_bytes(&self) -> usize {
        self.entry.len() - HEADER
    }

    /// Sends the commit being built to the writer thread (nothing when it is
    /// empty); its waiters are answered once it is on disk.
    pub fn commit(&mut self) {
        if self.pending_bytes() == 0 {
            return;
        }
        let mut entry = std::mem::replace(&mut self.entry, vec![0; HEADER]);
        entry::seal(&mut entry, self.file);
        self.file_bytes += entry.len() as u64;
        let job = Job::Append {
            file: self.file,
            entry,
            position: self.position,
        };
        self.position += 1;
        if self.file_bytes >= FILE_BYTES {
            self.file += 1;
            self.file_bytes = 0;
        }
        self.send(job);
    }

    fn send(&mut self, job: Job) {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        if !sent {
            // The writer thread is gone (it logged why): nothing will
            // become durable, so no waiter should keep waiting.
            self.mark.close();
        }
    }

    /// Files whose records are all in the engine now: once the persist that
    /// follows completes, [`delete`](Self::delete) them. The open file is
    /// closed for this when it is complete too, so an idle log empties.
    pub fn stored_files(&mut self) -> Vec<FileNo> {
        if self.pending_bytes() == 0
            && self.file_bytes > 0
            && self.outstanding.get(&self.file).is_none_or(|&c| c == 0)
        {
            self.file += 1;
            self.file_bytes = 0;
        }
        let current = self.file;
        self.outstanding
            .iter()
            .filter(|&(&f, &c)| f < current && c == 0)
            .map(|(&f, _)| f)
            .collect()
    }

    /// Deletes `files` (from [`stored_files`](Self::stored_files), after a
    /// successful persist).
    pub fn delete(&mut self, files: Vec<FileNo>) {
        if files.is_empty() {
            return;
        }
        for f in &files {
            self.outstanding.remove(f);
        }
        self.send(Job::Delete(files));
    }

    /// Commits what is pending and stops the writer thread once it has
    /// written everything; the mark is closed.
    pub fn close(&mut self) {
        self.commit();
        self.tx = None;
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                log::error!("the intake-log thread panicked");
            }
        }
        self.mark.close();
    }
}

impl Drop for IntakeLog {
    fn drop(&mut self) {
        self.close();
    }
}
