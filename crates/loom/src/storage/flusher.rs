//! The flusher thread: compresses sealed chunks into frames, appends them
//! to segment files, in order, and syncs them on a timer.
//!
//! The writer hands over a view of a block and the byte range to write; the
//! flusher encodes every chunk of the range it has not written yet
//! (`log/codec.rs`, `storage/frame.rs`: off the ingest thread, which only
//! waits when every in-memory block is still queued here), appends the
//! frames to the segment file (with `O_DIRECT` where the file system allows:
//! whole 4 KiB pages, the last partial page zero-padded and rewritten by
//! the next job), lists them in the shared [`SegmentFiles`] so readers find
//! them once the block leaves memory, drops the view and acknowledges. Written files are `fdatasync`ed at least every
//! `sync_interval`, whether new jobs arrive or not, and at once for a
//! durable job (`persist`). A write that fails (a full disk) is retried every
//! `retry_interval` until it succeeds or the writer shuts down; meanwhile
//! `FlusherStatus::failing` says why, so the writer can refuse records
//! instead of waiting and readers keep answering.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::config::FlushMode;
use crate::log::chunk::{padded, ChunkHeader, HEADER_LEN};
use crate::log::codec::{Codec, Encoder};
use crate::log::slab::SlabView;
use crate::storage::frame::{self, FrameHeader, FrameLoc, FRAME_HEADER};
use crate::storage::layout::Layout;
use crate::storage::pace::{Pace, CATCH_UP_LEVEL};
use crate::storage::segments::SegmentFiles;

/// Direct I/O granularity: writes cover whole pages.
const PAGE: usize = 4096;
/// Frames are written out once this many bytes wait, even mid-job.
const WRITE_AT: usize = 4 << 20;

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
    /// Chunks written as frames.
    pub chunks_written: AtomicU64,
    /// Of those, chunks stored uncompressed (they did not compress, or
    /// compression is off): the fallback the stats report.
    pub chunks_stored_raw: AtomicU64,
    /// Of those, chunks stored uncompressed because full blocks queued up
    /// behind them (compression was not keeping up with ingest).
    pub chunks_raw_to_keep_up: AtomicU64,
    /// Chunks compressed at `CATCH_UP_LEVEL` instead of the configured
    /// level because a job waited behind them.
    pub chunks_fast_to_keep_up: AtomicU64,
    /// Bytes of the written chunks before compression (headers included).
    pub chunk_bytes: AtomicU64,
    /// How full the application's ingest queue is, in percent, as it last
    /// said (`Writer::set_ingest_backlog`); read before every chunk.
    pub ingest_backlog: AtomicU8,
    /// Bytes of their frames on disk (headers and padding included).
    pub frame_bytes: AtomicU64,
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
    /// Where readers find written frames.
    pub files: Arc<SegmentFiles>,
    /// zstd level, `None` to store chunks uncompressed.
    pub compression: Option<i32>,
    /// Log address of the first chunk the writer will hand over (the start
    /// of a segment no earlier run wrote).
    pub start: u64,
    /// Jobs queued behind the current one at which its chunks are stored
    /// uncompressed to catch up; from one queued job below that they are
    /// compressed at `CATCH_UP_LEVEL`.
    pub hurry_at: usize,
    /// The thread's nice value (`Config::flusher_nice`).
    pub nice: i32,
}

/// The segment file being appended to: bytes from file offset `start`
/// (page aligned) on, not all written yet.
struct Output {
    segment: u64,
    start: u64,
    buf: Vec<u8>,
    /// Frames in `buf` not yet listed in `SegmentFiles`.
    frames: Vec<FrameLoc>,
}

/// A page-aligned buffer for `O_DIRECT` writes (a `Vec` with the aligned
/// part starting at `at`).
struct AlignedBuf {
    raw: Vec<u8>,
    at: usize,
    cap: usize,
}

impl AlignedBuf {
    fn new(cap: usize) -> Self {
        let raw = vec![0u8; cap + PAGE];
        let at = raw.as_ptr().align_offset(PAGE).min(PAGE);
        AlignedBuf { raw, at, cap }
    }

    fn slice(&mut self, n: usize) -> &mut [u8] {
        &mut self.raw[self.at..self.at + n]
    }
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
    files_shared: Arc<SegmentFiles>,
    encoder: Encoder,
    /// The encoder at `CATCH_UP_LEVEL` (or the configured level if lower).
    fast: Encoder,
    body: Vec<u8>,
    /// Log address of the next chunk to encode.
    cursor: u64,
    out: Option<Output>,
    io: AlignedBuf,
    /// Jobs queued behind the current one when it started (one of the
    /// two signals of [`Pace::choose`]).
    queued_jobs: usize,
    /// Queued jobs at which chunks are stored as they are.
    hurry_at: usize,
    /// Whether chunks are compressed at all.
    compressing: bool,
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
            files_shared: cfg.files,
            encoder: Encoder::new(cfg.compression),
            fast: Encoder::new(cfg.compression.map(|l| l.min(CATCH_UP_LEVEL))),
            body: Vec::new(),
            cursor: cfg.start,
            out: None,
            io: AlignedBuf::new(1 << 20),
            queued_jobs: 0,
            hurry_at: cfg.hurry_at,
            compressing: cfg.compression.is_some(),
        };
        let (retry, nice) = (cfg.retry_interval, cfg.nice);
        let thread = std::thread::Builder::new()
            .name("loom-flusher".into())
            .spawn(move || {
                crate::storage::pace::lower_priority(nice);
                run(&mut state, job_rx, ack_tx, retry)
            });
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
                // Jobs waiting behind this one mean compression is not
                // keeping up: compress cheaper, and with `hurry_at` waiting
                // store this job's chunks as they are, so the writer never
                // waits on the compressor (both counted).
                state.queued_jobs = jobs.len();
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
    /// The file of segment `seg`, emptied when `fresh` (a segment started
    /// by this run: nothing of it is valid yet).
    fn open(&mut self, seg: u64, fresh: bool) -> Result<&File, String> {
        if fresh {
            self.files.remove(&seg);
        }
        if !self.files.contains_key(&seg) {
            let path = Layout::segment_path(&self.dir, seg);
            let mut opts = OpenOptions::new();
            opts.write(true).create(true).truncate(fresh);
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
        let block = job.block.as_slice();
        let to = job.to.min(block.len());
        if job.to > job.from && self.cursor < job.base + to as u64 {
            self.encode(job.base, &block[..to])?;
        }
        self.write_out(true)?;
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

    /// Encodes the chunks of `block` (based at log address `base`) from
    /// the cursor on into frames of the output buffer.
    fn encode(&mut self, base: u64, block: &[u8]) -> Result<(), String> {
        // Chunks never straddle blocks: a cursor behind this block means
        // the rest of the previous block was empty.
        self.cursor = self.cursor.max(base);
        let seg = base / self.layout.segment_size;
        if self.out.as_ref().is_none_or(|o| o.segment != seg) {
            // Everything of the previous segment was written by its last job.
            self.open(seg, true)?;
            self.out = Some(Output {
                segment: seg,
                start: 0,
                buf: frame::file_header(seg).to_vec(),
                frames: Vec::new(),
            });
        }
        let mut o = (self.cursor - base) as usize;
        let (mut chunks, mut raw, mut chunk_bytes, mut frame_bytes) = (0u64, 0u64, 0u64, 0u64);
        let (mut hurried, mut fast) = (0u64, 0u64);
        while o + HEADER_LEN <= block.len() {
            let h = match ChunkHeader::read(&block[o..]) {
                Ok(Some(h)) => h,
                // Zeros: the block's unwritten rest (for now).
                Ok(None) => break,
                Err(e) => return Err(format!("block at {base}, offset {o}: {e}")),
            };
            let len = h.len as usize;
            let Some(payload) = block.get(o + HEADER_LEN..o + len) else {
                return Err(format!(
                    "block at {base}, offset {o}: chunk of {len} bytes cut off"
                ));
            };
            self.body.clear();
            let backlog = self.status.ingest_backlog.load(Ordering::Relaxed);
            let pace = Pace::choose(self.compressing, self.queued_jobs, self.hurry_at, backlog);
            let codec = match pace {
                Pace::Raw => {
                    hurried += 1;
                    self.body.extend_from_slice(payload);
                    Codec::Stored
                }
                Pace::Fast => {
                    fast += 1;
                    self.fast
                        .encode(payload, h.first_ts, h.count, &mut self.body)
                }
                Pace::Normal => self
                    .encoder
                    .encode(payload, h.first_ts, h.count, &mut self.body),
            };
            let Some(out) = self.out.as_mut() else {
                return Err("no segment file to write to".into());
            };
            let offset = out.start + out.buf.len() as u64;
            FrameHeader::append(&mut out.buf, base + o as u64, &h, codec, &self.body);
            out.frames.push(FrameLoc {
                addr: base + o as u64,
                offset,
                len: (FRAME_HEADER + self.body.len()) as u32,
            });
            chunks += 1;
            raw += u64::from(codec == Codec::Stored);
            chunk_bytes += padded(len) as u64;
            frame_bytes += padded(FRAME_HEADER + self.body.len()) as u64;
            o += padded(len);
            self.cursor = base + o as u64;
            if out.buf.len() >= WRITE_AT {
                self.write_out(false)?;
            }
        }
        let st = &self.status;
        st.chunks_written.fetch_add(chunks, Ordering::Relaxed);
        st.chunks_stored_raw.fetch_add(raw, Ordering::Relaxed);
        st.chunks_raw_to_keep_up
            .fetch_add(hurried, Ordering::Relaxed);
        st.chunks_fast_to_keep_up.fetch_add(fast, Ordering::Relaxed);
        st.chunk_bytes.fetch_add(chunk_bytes, Ordering::Relaxed);
        st.frame_bytes.fetch_add(frame_bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the output buffer's whole pages (and with `all`, its last
    /// partial page padded with zeros, kept to be rewritten), then lists
    /// its frames for readers. On failure nothing is dropped: a retry
    /// writes the same bytes again.
    fn write_out(&mut self, all: bool) -> Result<(), String> {
        let Some(mut out) = self.out.take() else {
            return Ok(());
        };
        let full = out.buf.len() / PAGE * PAGE;
        let end = if all {
            out.buf.len().div_ceil(PAGE) * PAGE
        } else {
            full
        };
        let mut done = 0usize;
        let mut result = Ok(());
        while done < end {
            let n = (end - done).min(self.io.cap);
            let have = out.buf.len().saturating_sub(done).min(n);
            let dst = self.io.slice(n);
            dst[..have].copy_from_slice(&out.buf[done..done + have]);
            dst[have..].fill(0);
            let at = out.start + done as u64;
            if let Err(e) = self.write_io(out.segment, at, n) {
                result = Err(e);
                break;
            }
            done += n;
        }
        if result.is_ok() {
            self.files_shared.add_frames(out.segment, &out.frames);
            out.frames.clear();
            out.buf.drain(..full);
            out.start += full as u64;
        }
        self.out = Some(out);
        result
    }

    fn write_io(&mut self, seg: u64, at: u64, n: usize) -> Result<(), String> {
        let dir = self.dir.clone();
        self.open(seg, false)?;
        let file = self
            .files
            .get(&seg)
            .ok_or_else(|| format!("segment {seg} vanished"))?;
        let bytes = &self.io.raw[self.io.at..self.io.at + n];
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
}
