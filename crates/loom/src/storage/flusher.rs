//! The flusher thread: writes block ranges to segment files, in order, and
//! syncs them on a timer.
//!
//! The writer hands over a view of a block and the byte range to write; the
//! flusher writes it (with `O_DIRECT` where the file system allows), drops
//! the view and acknowledges. Written files are `fdatasync`ed at least every
//! `sync_interval`, whether new jobs arrive or not, and at once for a
//! durable job (`persist`). A write that fails (a full disk) is retried every
//! `retry_interval` until it succeeds or the writer shuts down; meanwhile
//! `FlusherStatus::failing` says why, so the writer can refuse records
//! instead of waiting and readers keep answering.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::config::FlushMode;
use crate::log::slab::SlabView;
use crate::storage::layout::Layout;

/// One range of one block to write.
pub(crate) struct FlushJob {
    pub id: u64,
    pub block: SlabView<u8>,
    pub base: u64,
    pub from: usize,
    pub to: usize,
    /// Sync before acknowledging (a `persist`).
    pub durable: bool,
}

/// The flusher's answer to a job.
pub(crate) struct FlushAck {
    pub id: u64,
    pub result: Result<(), String>,
}

/// What the flusher thread tells the rest of the store.
#[derive(Default)]
pub(crate) struct FlusherStatus {
    /// Jobs (numbered from 0 in the order sent) whose bytes are durable:
    /// written and, with `sync_data`, synced. Counted by job, not by
    /// address: a later job rewrites the zero padding an earlier persist
    /// wrote, so "the highest address written" overstates what is durable.
    pub durable_jobs: AtomicU64,
    /// Why writing currently fails, `None` while writes succeed.
    pub failing: Mutex<Option<String>>,
    /// Writes or syncs that failed (each retry counts).
    pub write_errors: AtomicU64,
    /// Set on shutdown: a failing write is given up instead of retried.
    pub stop: AtomicBool,
}

impl FlusherStatus {
    pub(crate) fn failing(&self) -> Option<String> {
        match self.failing.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn set_failing(&self, why: Option<String>) {
        match self.failing.lock() {
            Ok(mut g) => *g = why,
            Err(p) => *p.into_inner() = why,
        }
    }
}

pub(crate) struct Flusher {
    pub jobs: Sender<FlushJob>,
    pub acks: Receiver<FlushAck>,
    pub status: Arc<FlusherStatus>,
    pub thread: Option<JoinHandle<()>>,
}

/// Settings of the flusher thread.
pub(crate) struct FlusherConfig {
    pub dir: PathBuf,
    pub layout: Layout,
    pub mode: FlushMode,
    pub sync_data: bool,
    pub sync_interval: Duration,
    pub retry_interval: Duration,
}

struct State {
    dir: PathBuf,
    layout: Layout,
    mode: FlushMode,
    sync_data: bool,
    sync_interval: Duration,
    last_sync: Instant,
    unsynced: Vec<u64>,
    files: HashMap<u64, File>,
    /// Jobs written so far (id of the last one + 1).
    written_jobs: u64,
    status: Arc<FlusherStatus>,
}

impl Flusher {
    pub(crate) fn start(cfg: FlusherConfig) -> Self {
        let (jobs, job_rx) = crossbeam_channel::unbounded::<FlushJob>();
        let (ack_tx, acks) = crossbeam_channel::unbounded::<FlushAck>();
        let status = Arc::new(FlusherStatus::default());
        let mut state = State {
            dir: cfg.dir,
            layout: cfg.layout,
            mode: cfg.mode,
            sync_data: cfg.sync_data,
            sync_interval: cfg.sync_interval,
            last_sync: Instant::now(),
            unsynced: Vec::new(),
            files: HashMap::new(),
            written_jobs: 0,
            status: Arc::clone(&status),
        };
        let retry = cfg.retry_interval;
        let thread = std::thread::Builder::new()
            .name("loom-flusher".into())
            .spawn(move || run(&mut state, job_rx, ack_tx, retry));
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                log::error!("cannot start the flusher thread: {e}");
                None
            }
        };
        Flusher {
            jobs,
            acks,
            status,
            thread,
        }
    }
}

fn run(state: &mut State, jobs: Receiver<FlushJob>, acks: Sender<FlushAck>, retry: Duration) {
    // Wake often enough to keep the sync timer even when no job comes.
    let tick = state
        .sync_interval
        .clamp(Duration::from_millis(5), Duration::from_millis(100));
    loop {
        match jobs.recv_timeout(tick) {
            Ok(job) => {
                let result = state.write_retrying(&job, retry);
                let id = job.id;
                drop(job);
                if acks.send(FlushAck { id, result }).is_err() {
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if state.last_sync.elapsed() >= state.sync_interval {
                    let _ = state.sync_all();
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                let _ = state.sync_all();
                break;
            }
        }
    }
}

impl State {
    fn open(&mut self, seg: u64) -> Result<&File, String> {
        if !self.files.contains_key(&seg) {
            let path = Layout::segment_path(&self.dir, seg);
            let mut opts = OpenOptions::new();
            opts.write(true).create(true).truncate(false);
            let file = match self.mode {
                FlushMode::Direct => match opts.clone().custom_flags(libc::O_DIRECT).open(&path) {
                    Ok(f) => f,
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        log::warn!(
                            "{}: the file system refuses O_DIRECT, writing through the page cache",
                            path.display()
                        );
                        self.mode = FlushMode::Buffered;
                        opts.open(&path)
                            .map_err(|e| format!("{}: {e}", path.display()))?
                    }
                    Err(e) => return Err(format!("{}: {e}", path.display())),
                },
                FlushMode::Buffered => opts
                    .open(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
            };
            self.files.insert(seg, file);
        }
        self.files
            .get(&seg)
            .ok_or_else(|| format!("segment {seg} vanished"))
    }

    /// Writes a job, retrying a failing write until it succeeds or the
    /// writer shuts down; logs once when writes start and stop failing.
    fn write_retrying(&mut self, job: &FlushJob, retry: Duration) -> Result<(), String> {
        let mut failed_since: Option<Instant> = None;
        loop {
            match self.write(job) {
                Ok(()) => {
                    if let Some(t) = failed_since {
                        log::warn!(
                            "{}: writes succeed again after {:.1} s of failures",
                            self.dir.display(),
                            t.elapsed().as_secs_f64()
                        );
                        self.status.set_failing(None);
                    }
                    return Ok(());
                }
                Err(m) => {
                    self.status.write_errors.fetch_add(1, Ordering::Relaxed);
                    if failed_since.is_none() {
                        log::error!(
                            "{}: {m}; retrying every {} ms, records that do not fit in memory meanwhile are refused",
                            self.dir.display(),
                            retry.as_millis()
                        );
                        failed_since = Some(Instant::now());
                        self.status.set_failing(Some(m.clone()));
                    }
                    if self.status.stop.load(Ordering::Acquire) {
                        return Err(m);
                    }
                    std::thread::sleep(retry);
                }
            }
        }
    }

    fn write(&mut self, job: &FlushJob) -> Result<(), String> {
        let (seg, off) = self.layout.locate(job.base);
        let bytes = job
            .block
            .as_slice()
            .get(job.from..job.to)
            .ok_or_else(|| format!("flush range {}..{} outside the block", job.from, job.to))?;
        if !bytes.is_empty() {
            self.write_range(seg, off + job.from as u64, bytes)?;
        }
        self.written_jobs = self.written_jobs.max(job.id + 1);
        if !self.sync_data {
            // Written data survives a crash of the process, which is all
            // this mode promises.
            self.status
                .durable_jobs
                .store(self.written_jobs, Ordering::Release);
        }
        if job.durable || self.last_sync.elapsed() >= self.sync_interval {
            self.sync_all()?;
        }
        Ok(())
    }

    /// Syncs every file written since the last sync and advances
    /// `durable_jobs`.
    fn sync_all(&mut self) -> Result<(), String> {
        if self.sync_data {
            let dir = self.dir.clone();
            while let Some(&s) = self.unsynced.last() {
                if let Some(f) = self.files.get(&s) {
                    if let Err(e) = f.sync_data() {
                        let m = format!(
                            "{}: fdatasync failed: {e}",
                            Layout::segment_path(&dir, s).display()
                        );
                        self.status.write_errors.fetch_add(1, Ordering::Relaxed);
                        log::error!("{m}");
                        return Err(m);
                    }
                }
                self.unsynced.pop();
            }
        }
        self.unsynced.clear();
        self.last_sync = Instant::now();
        self.status
            .durable_jobs
            .store(self.written_jobs, Ordering::Release);
        Ok(())
    }

    fn write_range(&mut self, seg: u64, at: u64, bytes: &[u8]) -> Result<(), String> {
        let dir = self.dir.clone();
        let file = self.open(seg)?;
        file.write_all_at(bytes, at).map_err(|e| {
            format!(
                "{}: write failed: {e}",
                Layout::segment_path(&dir, seg).display()
            )
        })?;
        if !self.unsynced.contains(&seg) {
            self.unsynced.push(seg);
        }
        // The log only moves forward: keep descriptors for the segment being
        // written and any still waiting for a sync.
        let unsynced = &self.unsynced;
        self.files
            .retain(|&s, _| s + 1 >= seg || unsynced.contains(&s));
        Ok(())
    }
}
