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
//! entries `[magic u32][payload length u32][CRC32C of payload u32][payload]`,
//! the payload a sequence of records `[series u64][time µs u64][length
//! u32][bytes]` (little-endian). A file is deleted once every record in it
//! has been pushed into the engine and a persist has completed after that.
//! At start the remaining files are read back and their records go through
//! the reorder stage again; a record whose series already holds a record
//! at its time or later in the store was stored before the crash and is
//! skipped (records are stored in time order per series, and a later one
//! than the series' newest is never refused as late: see `stage.rs`).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use crossbeam_channel::{Receiver, Sender};
use endpoint::DurableMark;
use otlp::Shaped;

/// Marks the start of every entry.
const MAGIC: u32 = 0x4c4f_4931;
/// Entry header: magic, payload length, CRC.
const HEADER: usize = 12;
/// Record header: series, time, length.
const RECORD_HEADER: usize = 20;
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

fn file_name(dir: &Path, n: FileNo) -> PathBuf {
    dir.join(format!("intake-{n:010}.log"))
}

fn file_numbers(dir: &Path) -> anyhow::Result<Vec<FileNo>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let e = e.with_context(|| format!("listing {}", dir.display()))?;
        let name = e.file_name();
        if let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix("intake-"))
            .and_then(|s| s.strip_suffix(".log"))
            .and_then(|s| s.parse().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The records of one file's valid entries, and whether it ended in a torn
/// or corrupt entry (everything after it is not read).
fn read_file(bytes: &[u8], out: &mut Vec<Shaped>) -> bool {
    let mut at = 0;
    while at < bytes.len() {
        let (Some(magic), Some(len), Some(crc)) = (
            u32_at(bytes, at),
            u32_at(bytes, at + 4),
            u32_at(bytes, at + 8),
        ) else {
            return true;
        };
        let Some(payload) = bytes.get(at + HEADER..at + HEADER + len as usize) else {
            return true;
        };
        if magic != MAGIC || crc32c::crc32c(payload) != crc {
            return true;
        }
        let mut p = 0;
        let before = out.len();
        while p < payload.len() {
            let rec = (|| {
                let source = u64_at(payload, p)?;
                let time_us = u64_at(payload, p + 8)?;
                let n = u32_at(payload, p + 16)? as usize;
                let bytes = payload.get(p + RECORD_HEADER..p + RECORD_HEADER + n)?;
                Some((
                    n,
                    Shaped {
                        source,
                        time_us,
                        bytes: bytes.to_vec(),
                    },
                ))
            })();
            match rec {
                Some((n, r)) => {
                    out.push(r);
                    p += RECORD_HEADER + n;
                }
                None => {
                    // A valid CRC over a payload we cannot parse: written by
                    // something else; keep nothing of the entry.
                    out.truncate(before);
                    return true;
                }
            }
        }
        at += HEADER + len as usize;
    }
    false
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
            if read_file(&bytes, &mut recs) {
                log::warn!(
                    "{}: stopped at a torn or corrupt entry after {} records (a crash mid-write; those records were never acknowledged)",
                    path.display(),
                    recs.len()
                );
            }
            left.extend(recs.into_iter().map(|r| (n, r)));
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let thread = {
            let (dir, mark) = (dir.to_path_buf(), mark.clone());
            std::thread::Builder::new()
                .name("intake-log".into())
                .spawn(move || write_loop(&dir, &rx, &mark))
                .context("starting the intake-log thread")?
        };
        let log = IntakeLog {
            tx: Some(tx),
            thread: Some(thread),
            mark,
            entry: vec![0; HEADER],
            file: numbers.last().map_or(1, |n| n + 1),
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
        let payload_len = (entry.len() - HEADER) as u32;
        let crc = crc32c::crc32c(&entry[HEADER..]);
        entry[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        entry[4..8].copy_from_slice(&payload_len.to_le_bytes());
        entry[8..12].copy_from_slice(&crc.to_le_bytes());
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

/// Open files of the writer thread.
struct Files<'a> {
    dir: &'a Path,
    open: BTreeMap<FileNo, File>,
    created: bool,
}

impl Files<'_> {
    fn get(&mut self, n: FileNo) -> std::io::Result<&mut File> {
        if !self.open.contains_key(&n) {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(file_name(self.dir, n))?;
            self.created = true;
            self.open.insert(n, f);
        }
        Ok(self.open.get_mut(&n).expect("inserted above"))
    }

    /// Appends `entry`; on failure cuts the file back so later entries stay readable.
    fn append(&mut self, n: FileNo, entry: &[u8]) -> std::io::Result<()> {
        let f = self.get(n)?;
        let len = f.metadata()?.len();
        let r = f.write_all(entry);
        if r.is_err() {
            let _ = f.set_len(len);
        }
        r
    }

    fn sync(&mut self, touched: &[FileNo]) -> std::io::Result<()> {
        for n in touched {
            if let Some(f) = self.open.get(n) {
                f.sync_data()?;
            }
        }
        if std::mem::take(&mut self.created) {
            // A new file's name must survive a crash too.
            File::open(self.dir)?.sync_all()?;
        }
        Ok(())
    }
}

/// The writer thread: appends every commit queued since it last looked,
/// syncs once, advances the mark.
fn write_loop(dir: &Path, rx: &Receiver<Job>, mark: &DurableMark) {
    let mut files = Files {
        dir,
        open: BTreeMap::new(),
        created: false,
    };
    let mut errors = 0u64;
    while let Ok(first) = rx.recv() {
        let mut touched: Vec<FileNo> = Vec::new();
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        let mut result = Ok(());
        for job in std::iter::once(first).chain(rx.try_iter()) {
            match job {
                Job::Append {
                    file,
                    entry,
                    position,
                } => {
                    lo = lo.min(position);
                    hi = hi.max(position);
                    if result.is_ok() {
                        result = files.append(file, &entry);
                        if !touched.contains(&file) {
                            touched.push(file);
                        }
                    }
                }
                Job::Delete(list) => {
                    for n in list {
                        files.open.remove(&n);
                        let p = file_name(dir, n);
                        if let Err(e) = std::fs::remove_file(&p) {
                            log::warn!("cannot delete {}: {e}", p.display());
                        }
                    }
                }
            }
        }
        if hi == 0 {
            continue;
        }
        let result = result.and_then(|()| files.sync(&touched));
        match result {
            Ok(()) => mark.advance(hi),
            Err(e) => {
                errors += 1;
                if errors <= 10 {
                    log::error!(
                        "intake log {}: {e}: OTLP requests are answered \"retry later\"",
                        dir.display()
                    );
                }
                mark.fail(lo, hi);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rec(source: u64, time_us: u64, n: usize) -> Shaped {
        Shaped {
            source,
            time_us,
            bytes: (0..n)
                .map(|i| (i as u8).wrapping_add(time_us as u8))
                .collect(),
        }
    }

    /// Commits become durable in order, survive a reopen with a torn tail,
    /// and files are deleted only when told.
    #[test]
    fn commits_are_durable_read_back_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let mark = Arc::new(DurableMark::new());
        let (mut log, left) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
        assert!(left.is_empty());
        let a = [rec(1, 10, 5), rec(2, 11, 0)];
        let (f1, p1) = log.append(&a);
        log.commit();
        let (f2, p2) = log.append(&[rec(1, 12, 300)]);
        log.commit();
        assert_eq!((f1, p1, f2, p2), (1, 1, 1, 2));
        assert_eq!(mark.wait_blocking(2, Duration::from_secs(10)), Ok(()));
        drop(log);

        // A torn entry at the end (a crash mid-write) is cut off.
        let path = file_name(dir.path(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        let good = bytes.len();
        bytes.extend_from_slice(&MAGIC.to_le_bytes());
        bytes.extend_from_slice(&[9, 9, 9]);
        std::fs::write(&path, &bytes).unwrap();
        let mark = Arc::new(DurableMark::new());
        let (mut log, left) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
        let got: Vec<(u64, u64, u64, Vec<u8>)> = left
            .iter()
            .map(|(f, r)| (*f, r.source, r.time_us, r.bytes.clone()))
            .collect();
        let want: Vec<(u64, u64, u64, Vec<u8>)> = a
            .iter()
            .chain(&[rec(1, 12, 300)])
            .map(|r| (1, r.source, r.time_us, r.bytes.clone()))
            .collect();
        assert_eq!(got, want);
        assert!(bytes.len() > good);

        // New commits go to a new file; file 1 stays until its records are
        // pushed and deleted.
        log.replayed(1, 3);
        let (f, p) = log.append(&[rec(3, 20, 1)]);
        assert_eq!((f, p), (2, 1));
        log.commit();
        assert_eq!(log.stored_files(), Vec::<FileNo>::new());
        log.pushed(1, 3);
        assert_eq!(log.stored_files(), vec![1]);
        log.delete(vec![1]);
        log.pushed(2, 1);
        assert_eq!(mark.wait_blocking(1, Duration::from_secs(10)), Ok(()));
        // The open file is closed for deletion once complete.
        assert_eq!(log.stored_files(), vec![2]);
        log.delete(vec![2]);
        drop(log);
        assert!(file_numbers(dir.path()).unwrap().is_empty());
    }
}
