//! Continuous export (loom-app `--export-to`): a thread of its own that,
//! every interval, exports what the store made durable since the last
//! round, reading through a `loom::Reader`. It never touches the writer, so
//! ingest never waits for it; when the target is down it retries with
//! backoff and logs how far behind it is.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::Reader;

use crate::exporter::Exporter;

/// Longest wait between two attempts while the target fails.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// First wait after a failure.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// How often the thread checks for a stop request while it waits.
const STOP_POLL: Duration = Duration::from_millis(50);
/// Nice value of the export thread: on a busy machine the ingest thread
/// gets the CPU first.
const EXPORT_NICE: i32 = 10;

/// Counters the export thread keeps up to date (for progress lines/tests).
#[derive(Debug, Default)]
pub struct ExportStatus {
    /// Records exported since the thread started.
    pub records: AtomicU64,
    /// Files written since the thread started.
    pub files: AtomicU64,
    /// Durable records not exported yet, as of the last round.
    pub behind_records: AtomicU64,
    /// Rounds that failed (each retried).
    pub failures: AtomicU64,
    /// Records retention dropped before they were exported.
    pub lost_to_retention: AtomicU64,
    /// Log position reached.
    pub position: AtomicU64,
}

/// Runs rounds every `interval` until `stop` is set. Logs one line per
/// round that exported something or failed.
pub fn run(
    reader: Reader,
    mut exporter: Exporter,
    interval: Duration,
    stop: Arc<AtomicBool>,
    status: Arc<ExportStatus>,
) {
    lower_priority();
    let mut backoff = FIRST_BACKOFF;
    let mut wait = Duration::ZERO;
    loop {
        if sleep_unless_stopped(wait, &stop) {
            return;
        }
        let started = Instant::now();
        let snap = reader.durable_snapshot();
        match exporter.export(&snap) {
            Ok(r) => {
                backoff = FIRST_BACKOFF;
                status.records.fetch_add(r.records, Ordering::Relaxed);
                status.files.fetch_add(r.files, Ordering::Relaxed);
                status
                    .lost_to_retention
                    .fetch_add(r.records_lost_to_retention, Ordering::Relaxed);
                status.position.store(r.position, Ordering::Relaxed);
                status.behind_records.store(0, Ordering::Relaxed);
                if r.records > 0 {
                    log::info!(
                        "export to {}: {} records in {} files ({:.1} MB) in {:.0} ms, position {}",
                        exporter.target().url(),
                        r.records,
                        r.files,
                        r.bytes as f64 / 1e6,
                        started.elapsed().as_secs_f64() * 1e3,
                        r.position
                    );
                }
                wait = interval.saturating_sub(started.elapsed());
            }
            Err(e) => {
                status.failures.fetch_add(1, Ordering::Relaxed);
                let behind = exporter.backlog(&snap);
                status
                    .behind_records
                    .store(behind.records, Ordering::Relaxed);
                log::warn!(
                    "export to {} failed: {e}; behind by {} records ({:.1} MB of log); retrying in {} s",
                    exporter.target().url(),
                    behind.records,
                    behind.log_bytes as f64 / 1e6,
                    backoff.as_secs()
                );
                wait = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Sleeps `d` in short steps; true when `stop` was set meanwhile.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        let now = Instant::now();
        if now >= end {
            return false;
        }
        std::thread::sleep((end - now).min(STOP_POLL));
    }
}

/// Lowers this thread's scheduling priority (Linux: nice is per thread).
fn lower_priority() {
    if let Err(e) = loom::lower_thread_priority(EXPORT_NICE) {
        log::debug!("export thread keeps its priority: {e}");
    }
}
