//! The flusher thread: writes block ranges to segment files, in order.
//!
//! The writer hands over a view of a block and the byte range to write; the
//! flusher writes it (with `O_DIRECT` where the file system allows), optionally
//! `fdatasync`s, drops the view and acknowledges. The writer never waits for
//! this except in `persist` and when every in-memory block is in flight.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

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

pub(crate) struct Flusher {
    pub jobs: Sender<FlushJob>,
    pub acks: Receiver<FlushAck>,
    pub thread: Option<JoinHandle<()>>,
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
}

impl Flusher {
    pub(crate) fn start(
        dir: PathBuf,
        layout: Layout,
        mode: FlushMode,
        sync_data: bool,
        sync_interval: Duration,
    ) -> Self {
        let (jobs, job_rx) = crossbeam_channel::unbounded::<FlushJob>();
        let (ack_tx, acks) = crossbeam_channel::unbounded::<FlushAck>();
        let mut state = State {
            dir,
            layout,
            mode,
            sync_data,
            sync_interval,
            last_sync: Instant::now(),
            unsynced: Vec::new(),
            files: HashMap::new(),
        };
        let thread = std::thread::Builder::new()
            .name("loom-flusher".into())
            .spawn(move || {
                for job in job_rx {
                    let result = state.write(&job);
                    let id = job.id;
                    drop(job);
                    if ack_tx.send(FlushAck { id, result }).is_err() {
                        break;
                    }
                }
            });
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                log::error!("cannot start the flusher thread: {e}");
                None
            }
        };
        Flusher { jobs, acks, thread }
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

    fn write(&mut self, job: &FlushJob) -> Result<(), String> {
        let (seg, off) = self.layout.locate(job.base);
        let bytes = job
            .block
            .as_slice()
            .get(job.from..job.to)
            .ok_or_else(|| format!("flush range {}..{} outside the block", job.from, job.to))?;
        let dir = self.dir.clone();
        if !bytes.is_empty() {
            self.write_range(seg, off + job.from as u64, bytes)?;
        }
        let due = job.durable || self.last_sync.elapsed() >= self.sync_interval;
        if self.sync_data && due {
            for s in std::mem::take(&mut self.unsynced) {
                if let Some(f) = self.files.get(&s) {
                    f.sync_data().map_err(|e| {
                        format!(
                            "{}: fdatasync failed: {e}",
                            Layout::segment_path(&dir, s).display()
                        )
                    })?;
                }
            }
            self.last_sync = Instant::now();
        }
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
