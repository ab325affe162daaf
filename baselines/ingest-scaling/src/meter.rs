//! Record counters shared between writer threads and the once-a-second
//! progress line.

use std::sync::atomic::{AtomicU64, Ordering};
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
}

impl Meter {
    /// A meter for `threads` writer threads, all at zero.
    pub fn new(threads: usize) -> Self {
        Meter {
            counters: (0..threads).map(|_| PaddedCounter::default()).collect(),
        }
    }

    /// Adds `records` to thread `thread`'s counter.
    ///
    /// Panics if `thread` is not below the thread count given to [`Meter::new`].
    pub fn add(&self, thread: usize, records: u64) {
        self.counters[thread]
            .0
            .fetch_add(records, Ordering::Relaxed);
    }

    /// Sum over all threads.
    pub fn total(&self) -> u64 {
        self.counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// Prints `label` progress lines to stderr once a second until dropped.
pub struct ProgressPrinter {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl ProgressPrinter {
    /// Starts the printer thread. `record_bytes` is the payload size, used for MB/s.
    pub fn start(label: String, meter: Arc<Meter>, record_bytes: u64) -> std::io::Result<Self> {
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
