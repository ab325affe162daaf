//! Record counters shared between writer threads and the once-a-second
//! progress line, which also stops the run early if the disk is nearly full.

use crate::storage;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One counter per writer thread, padded so threads do not share a cache line.
#[repr(align(128))]
#[derive(Default, Debug)]
struct PaddedCounter(AtomicU64);

/// Records written so far, per writer thread.
#[derive(Debug)]
pub struct Meter {
    counters: Vec<PaddedCounter>,
    stop: AtomicBool,
}

impl Meter {
    /// A meter for `threads` writer threads, all at zero.
    pub fn new(threads: usize) -> Self {
        Meter {
            counters: (0..threads).map(|_| PaddedCounter::default()).collect(),
            stop: AtomicBool::new(false),
        }
    }

    /// Asks the writer threads to stop before their end time.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether [`Meter::request_stop`] was called.
    #[inline]
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Adds `records` to thread `thread`'s counter.
    ///
    /// Panics if `thread` is not below the thread count given to [`Meter::new`].
    pub fn add(&self, thread: usize, records: u64) {
        self.counters[thread]
            .0
            .fetch_add(records, Ordering::Relaxed);
    }

    /// Each thread's count, in thread order.
    pub fn per_thread(&self) -> Vec<u64> {
        self.counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .collect()
    }

    /// Sum over all threads.
    pub fn total(&self) -> u64 {
        self.counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// Free-space floor of the storage file system, checked once a second.
#[derive(Clone, Debug)]
pub struct DiskGuard {
    /// A path on the file system the store writes to.
    pub dir: PathBuf,
    /// Stop the run when fewer bytes than this are available.
    pub reserve_bytes: u64,
}

/// Prints `label` progress lines to stderr once a second until dropped.
pub struct ProgressPrinter {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl ProgressPrinter {
    /// Starts the printer thread. `record_bytes` is the payload size, used for
    /// MB/s. Each second it also checks `guard` and asks the writers to stop
    /// (with a note on stderr) when the disk is nearly full.
    pub fn start(
        label: String,
        meter: Arc<Meter>,
        record_bytes: u64,
        guard: DiskGuard,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let start = Instant::now();
                let mut last_time = start;
                let mut last_total = 0u64;
                loop {
                    match stopped.recv_timeout(Duration::from_secs(1)) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                    let now = Instant::now();
                    let total = meter.total();
                    let secs = now.duration_since(last_time).as_secs_f64();
                    let rate = (total - last_total) as f64 / secs;
                    eprintln!(
                        "[ingest-scaling] {label} t={:.0}s records/s={:.0} MB/s={:.1} records={}",
                        now.duration_since(start).as_secs_f64(),
                        rate,
                        rate * record_bytes as f64 / 1e6,
                        total
                    );
                    last_time = now;
                    last_total = total;
                    match storage::available_bytes(&guard.dir) {
                        Ok(free) if free < guard.reserve_bytes && !meter.stop_requested() => {
                            eprintln!(
                                "[ingest-scaling] stopping early: {} MB free on {} (reserve {} MB); records/s covers the shorter run",
                                free / 1_000_000,
                                guard.dir.display(),
                                guard.reserve_bytes / 1_000_000
                            );
                            meter.request_stop();
                        }
                        Ok(_) => {}
                        Err(e) => eprintln!("[ingest-scaling] cannot check free space: {e:#}"),
                    }
                }
            })?;
        Ok(ProgressPrinter {
            stop: Some(stop),
            handle: Some(handle),
        })
    }
}

impl Drop for ProgressPrinter {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
