//! The intake log: what makes an OTLP or `/write` acknowledgement durable
//! before the records reach the engine.
//!
//! OTLP records wait in the reorder window (seconds of their own time)
//! before they can be pushed in time order, and the engine persists once
//! per `--persist-interval-ms`; an exporter that is told "stored" drops its
//! copy at once. So every request is first appended to this log, and is
//! answered only once the log is fsynced up to it (the [`DurableMark`]
//! position of its entry). One writer thread does the I/O and batches
//! every entry queued while it was syncing into one `fdatasync` (group
//! commit): neither the handlers nor the ingest thread wait for the disk.
//!
//! An OTLP request is logged *raw*, as received (decompressed), by its
//! handler before it is decoded ([`RawLog::log_request`]): the write and
//! its sync overlap decoding and conversion, which is what a client with
//! one request in flight waits for. `/write` requests are logged as their
//! converted records by the ingest thread ([`IntakeLog::append`]).
//!
//! Files `intake-<n>.log` in `<store>/otlp-intake/`, each a sequence of
//! entries `[magic u32][payload length u32][CRC32C u32][file number u64]
//! [payload]` (the CRC covers the file number and the payload). Magic
//! `LOI2`: the payload is a sequence of records `[series u64][time µs u64]
//! [length u32][bytes]`; magic `LOR1`: one raw request `[signal u8]
//! [encoding u8][6 bytes zero][arrival µs u64][body]` (little-endian). A
//! file is done once every request logged in it has been converted, its
//! records pushed into the engine and a persist has completed after that:
//! a per-file count of outstanding requests and records keeps it until
//! then.
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
//! At start the remaining files are read back, raw requests are decoded
//! and converted again (at their logged arrival time), and the records go
//! through the reorder stage again; a record whose series already holds a
//! record at its time or later in the store was stored before the crash
//! and is skipped (records are stored in time order per series, and a
//! later one than the series' newest is never refused as late: see
//! `stage.rs`).

mod blank;
mod entry;
mod files;
#[cfg(test)]
mod tests;
mod writer;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use anyhow::Context;
use crossbeam_channel::Sender;
use endpoint::DurableMark;
use otlp::Shaped;

pub use entry::Logged;
use entry::{read_file, End};
use files::{file_name, file_numbers, numbered};

/// Done files kept for reuse; beyond this they are deleted (each holds
/// about [`FILE_BYTES`] of disk while it waits).
pub const MAX_SPARES: usize = 4;
/// A file takes new entries until it holds this many bytes.
const FILE_BYTES: u64 = 32 << 20;
/// Room a blank file leaves past [`FILE_BYTES`] for a file's last entry
/// (a larger one extends the file).
const LAST_ENTRY_BYTES: u64 = 4 << 20;

/// Which log file holds a record (so its deletion can wait for the record).
pub type FileNo = u64;

/// What an earlier run left in the intake log, oldest first, with the file
/// holding each record.
pub type Leftover = Vec<(FileNo, Shaped)>;

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

/// Where entries go, shared by the request handlers (raw requests) and the
/// ingest thread (records, retirement). Positions are handed out and the
/// entries sent to the writer under one lock, so the writer sees them in
/// position order and a durable position covers every earlier one.
struct State {
    tx: Option<Sender<Job>>,
    file: FileNo,
    file_bytes: u64,
    /// Position the next entry makes durable.
    position: u64,
    /// Per file, what is not yet in the engine: raw requests not yet
    /// converted and handed to the ingest thread (1 each), records not yet
    /// pushed (1 each).
    outstanding: BTreeMap<FileNo, u64>,
}

/// The log as the request handlers see it.
pub struct RawLog {
    state: Mutex<State>,
    mark: Arc<DurableMark>,
}

/// A raw request in the log, not yet handed to the ingest thread; dropped
/// unhanded (refused, undecodable, nothing to store), it stops holding its
/// file back.
pub struct Reservation {
    log: Arc<RawLog>,
    /// The file holding the request.
    pub file: FileNo,
    /// The position that, durable, covers the request.
    pub position: u64,
    handed: bool,
}

impl Reservation {
    /// The ingest thread takes over the request's count (see
    /// [`IntakeLog::taken`]).
    pub fn handed(mut self) {
        self.handed = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.handed {
            self.log.lock().sub(self.file, 1);
        }
    }
}

impl State {
    fn sub(&mut self, file: FileNo, n: u64) {
        if let Some(c) = self.outstanding.get_mut(&file) {
            *c = c.saturating_sub(n);
        }
    }
}

impl RawLog {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves consistent
        // counts (every update is one statement): keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `entry` (header space reserved, payload after it) to the
    /// writer, counting `count` outstanding in its file; its file and
    /// position.
    fn submit(&self, mut entry: Vec<u8>, magic: u32, count: u64) -> (FileNo, u64) {
        let mut st = self.lock();
        let (file, position) = (st.file, st.position);
        entry::seal(&mut entry, magic, file);
        *st.outstanding.entry(file).or_default() += count;
        st.position += 1;
        st.file_bytes += entry.len() as u64;
        if st.file_bytes >= FILE_BYTES {
            st.file += 1;
            st.file_bytes = 0;
        }
        let job = Job::Append {
            file,
            entry,
            position,
        };
        if !send(&st, &self.mark, job) {
            st.tx = None;
        }
        (file, position)
    }

    /// Logs one OTLP request as received (`body` decompressed), arrived at
    /// `arrival_us`; the request holds its file until the reservation is
    /// handed to the ingest thread or dropped.
    pub fn log_request(
        self: &Arc<Self>,
        signal: otlp::Signal,
        encoding: otlp::Encoding,
        arrival_us: u64,
        body: &[u8],
    ) -> Reservation {
        let entry = entry::raw_entry(signal, encoding, arrival_us, body);
        let (file, position) = self.submit(entry, entry::MAGIC_RAW, 1);
        Reservation {
            log: self.clone(),
            file,
            position,
            handed: false,
        }
    }
}

/// Sends `job` to the writer; `false` (and the mark closed, so no waiter
/// keeps waiting) when the writer thread is gone (it logged why).
fn send(st: &State, mark: &DurableMark, job: Job) -> bool {
    let sent = st.tx.as_ref().is_some_and(|tx| tx.send(job).is_ok());
    if !sent {
        mark.close();
    }
    sent
}

/// The ingest thread's side of the log.
pub struct IntakeLog {
    raw: Arc<RawLog>,
    thread: Option<JoinHandle<()>>,
}

impl IntakeLog {
    /// Opens the log in `dir` (created if missing) and starts its writer
    /// thread; returns what is left from an earlier run with the file
    /// holding each, oldest first, for the caller to store.
    pub fn open(
        dir: &Path,
        mark: Arc<DurableMark>,
    ) -> anyhow::Result<(IntakeLog, Vec<(FileNo, Logged)>)> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let numbers = file_numbers(dir)?;
        let mut left = Vec::new();
        for &n in &numbers {
            let path = file_name(dir, n);
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let mut got = Vec::new();
            if read_file(&bytes, n, &mut got) == End::Torn {
                log::warn!(
                    "{}: stopped at a torn or corrupt entry after {} entries (a crash mid-write; it was never acknowledged)",
                    path.display(),
                    got.len()
                );
            }
            left.extend(got.into_iter().map(|r| (n, r)));
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
        let state = State {
            tx: Some(tx),
            file: next,
            file_bytes: 0,
            position: 1,
            outstanding: numbers.iter().map(|&n| (n, 0)).collect(),
        };
        let log = IntakeLog {
            raw: Arc::new(RawLog {
                state: Mutex::new(state),
                mark,
            }),
            thread: Some(thread),
        };
        Ok((log, left))
    }

    /// The handlers' side of the log.
    pub fn raw(&self) -> Arc<RawLog> {
        self.raw.clone()
    }

    /// Logs `records` (one entry, sent to the writer at once; the writer
    /// groups entries into one sync); the file they go to and the position
    /// that, durable, covers them.
    pub fn append(&mut self, records: &[Shaped]) -> (FileNo, u64) {
        let entry = entry::records_entry(records);
        self.raw.submit(entry, entry::MAGIC, records.len() as u64)
    }

    /// The file new entries go to.
    #[cfg(test)]
    pub fn current_file(&self) -> FileNo {
        self.raw.lock().file
    }

    /// A raw request logged in `file` was converted and `n` of its
    /// records are taken for the engine (its reservation handed over).
    pub fn taken(&mut self, file: FileNo, n: u64) {
        let mut st = self.raw.lock();
        *st.outstanding.entry(file).or_default() += n;
        st.sub(file, 1);
    }

    /// Counts `n` records of `file` read back at start and not yet stored.
    pub fn replayed(&mut self, file: FileNo, n: u64) {
        *self.raw.lock().outstanding.entry(file).or_default() += n;
    }

    /// `n` records of `file` were pushed into the engine.
    pub fn pushed(&mut self, file: FileNo, n: u64) {
        self.raw.lock().sub(file, n);
    }

    /// Files whose requests and records are all in the engine now: once
    /// the persist that follows completes, [`delete`](Self::delete) them.
    /// The open file is closed for this when it is complete too, so an
    /// idle log empties.
    pub fn stored_files(&mut self) -> Vec<FileNo> {
        let mut st = self.raw.lock();
        let file = st.file;
        if st.file_bytes > 0 && st.outstanding.get(&file).is_none_or(|&c| c == 0) {
            st.file += 1;
            st.file_bytes = 0;
        }
        let current = st.file;
        st.outstanding
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
        let mut st = self.raw.lock();
        for f in &files {
            st.outstanding.remove(f);
        }
        if !send(&st, &self.raw.mark, Job::Delete(files)) {
            st.tx = None;
        }
    }

    /// Stops the writer thread once it has written everything sent; the
    /// mark is closed.
    pub fn close(&mut self) {
        self.raw.lock().tx = None;
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                log::error!("the intake-log thread panicked");
            }
        }
        self.raw.mark.close();
    }
}

impl Drop for IntakeLog {
    fn drop(&mut self) {
        self.close();
    }
}
