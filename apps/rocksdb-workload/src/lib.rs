//! The monitored application of the probe-effect and end-to-end experiments:
//! `instances` embedded RocksDB databases, each loaded by
//! `threads_per_instance` threads doing mostly reads of a small hot key range
//! and writes over a large one. Every operation becomes a KV op record; the
//! eBPF probes can add syscall and page-cache records of this very process.
//!
//! Timeline: open and load the databases, run the workers for the warmup
//! (no telemetry), then start telemetry (sender thread, probes) and measure
//! for the configured duration. Record timestamps are µs since the end of the
//! warmup, on CLOCK_MONOTONIC (the probes' clock).

mod config;
mod error;
mod kv;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use probes::{ProbeConfig, ProbeHandle, ProbeStats};
use telemetry::RecordingHeader;

pub use config::{Destination, WorkloadConfig};
pub use error::WorkloadError;
use workload_pipeline::{gettid, open_sink, run_sender};
pub use workload_pipeline::{monotonic_ns, probe_record, Counters, Epoch, Progress, RecordBuffer};

use kv::WorkerShared;

/// Where the page cache is dropped from.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";
/// Batches the probe consumer may queue for the sender before dropping.
const PROBE_CHANNEL_BATCHES: usize = 4096;

/// Totals of a finished run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// Measured time (after warmup), s.
    pub seconds: f64,
    /// RocksDB operations completed in the measured time.
    pub ops: u64,
    /// KV op records handed to the destination.
    pub kv_sent: u64,
    /// Of `kv_sent`, the reads.
    pub kv_reads_sent: u64,
    /// Syscall records handed to the destination.
    pub syscall_sent: u64,
    /// Page-cache records handed to the destination.
    pub page_cache_sent: u64,
    /// App records dropped because the channel to the sender was full.
    pub app_dropped: u64,
    /// Probe statistics (kernel drops, probe channel drops).
    pub probes: ProbeStats,
}

impl Summary {
    /// RocksDB operations per second over the measured time.
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Records handed to the destination.
    pub fn sent(&self) -> u64 {
        self.kv_sent + self.syscall_sent + self.page_cache_sent
    }

    /// Records lost anywhere (app channel, probe channel, kernel ring buffers).
    pub fn dropped(&self) -> u64 {
        self.app_dropped + self.probes.channel_drops + self.probes.kernel_drops()
    }
}

/// Runs the workload; calls `on_progress` once per second of the measured
/// run. `on_event` receives human-readable milestones (warmup, attach).
pub fn run(
    config: WorkloadConfig,
    mut on_progress: impl FnMut(&Progress),
    mut on_event: impl FnMut(&str),
) -> Result<Summary, WorkloadError> {
    config.validate()?;
    let config = Arc::new(config);
    std::fs::create_dir_all(&config.rocksdb_path).map_err(WorkloadError::io(format!(
        "creating {}",
        config.rocksdb_path.display()
    )))?;

    let mut dbs = Vec::with_capacity(config.instances);
    for i in 0..config.instances {
        let db = kv::open_instance(&config.rocksdb_path, i)?;
        kv::load_hot_keys(&db, &config)?;
        dbs.push(Arc::new(db));
    }
    on_event(&format!(
        "opened {} RocksDB instances under {} with {} hot keys each",
        config.instances,
        config.rocksdb_path.display(),
        config.hot_keys
    ));

    let shared = Arc::new(WorkerShared::default());
    let counters = Arc::new(Counters::default());
    let (app_tx, app_rx) = crossbeam_channel::bounded(config.channel_batches);
    let mut workers: Vec<JoinHandle<Result<(), WorkloadError>>> = Vec::new();
    for (i, db) in dbs.iter().enumerate() {
        for t in 0..config.threads_per_instance {
            let (db, worker_config, worker_shared) = (db.clone(), config.clone(), shared.clone());
            let buffer = RecordBuffer::new(app_tx.clone(), config.batch_size, counters.clone());
            let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul((i * 1000 + t + 1) as u64);
            let spawned = std::thread::Builder::new()
                .name(format!("kv-{i}-{t}"))
                .spawn(move || kv::run_worker(db, worker_config, seed, worker_shared, buffer));
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) => {
                    shared.stop.store(true, Ordering::Relaxed);
                    return Err(WorkloadError::io("spawning a worker thread")(e));
                }
            }
        }
    }
    drop(app_tx);

    // Warmup: no telemetry, no measurement.
    on_event(&format!("warmup {} s", config.warmup.as_secs()));
    let mut drop_timer = DropCaches::new(config.drop_caches_interval);
    let warmup_end = Instant::now() + config.warmup;
    while Instant::now() < warmup_end {
        std::thread::sleep(Duration::from_millis(100).min(warmup_end - Instant::now()));
        drop_timer.tick(&mut on_event);
    }

    let result = measure(
        &config,
        &shared,
        &counters,
        app_rx,
        &mut drop_timer,
        &mut on_progress,
        &mut on_event,
    );
    shared.stop.store(true, Ordering::Relaxed);
    let mut worker_error = None;
    for w in workers {
        match w.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => worker_error = worker_error.or(Some(e)),
            Err(_) => worker_error = worker_error.or(Some(WorkloadError::ThreadPanicked("worker"))),
        }
    }
    let (mut summary, sender) = result?;
    // Workers are gone, so the app channel closes; the probes stopped, so the
    // probe channel closed too: the sender drains both and finishes the sink.
    match sender.join() {
        Ok(r) => r?,
        Err(_) => return Err(WorkloadError::ThreadPanicked("telemetry sender")),
    }
    if let Some(e) = worker_error {
        return Err(e);
    }
    summary.kv_sent = counters.kv_sent.load(Ordering::Relaxed);
    summary.kv_reads_sent = counters.kv_reads_sent.load(Ordering::Relaxed);
    summary.syscall_sent = counters.syscall_sent.load(Ordering::Relaxed);
    summary.page_cache_sent = counters.page_cache_sent.load(Ordering::Relaxed);
    summary.app_dropped = counters.app_dropped.load(Ordering::Relaxed);
    Ok(summary)
}

type Sender = JoinHandle<Result<(), WorkloadError>>;

/// Starts telemetry and runs the measured part; returns the partial summary
/// and the sender thread (still draining).
#[allow(clippy::too_many_lines)] // Over the 100-line limit from before it was enforced; split pending (issue 20 report).
fn measure(
    config: &Arc<WorkloadConfig>,
    shared: &Arc<WorkerShared>,
    counters: &Arc<Counters>,
    app_rx: crossbeam_channel::Receiver<Vec<telemetry::Record>>,
    drop_timer: &mut DropCaches,
    on_progress: &mut impl FnMut(&Progress),
    on_event: &mut impl FnMut(&str),
) -> Result<(Summary, Sender), WorkloadError> {
    let epoch = Epoch::now();
    shared.epoch_ns.store(epoch.start_ns(), Ordering::Release);

    let header = RecordingHeader {
        workload: "rocksdb".to_string(),
        phase: config.phase().to_string(),
        synthetic: false,
        description: format!(
            "live rocksdb-workload: instances={} threads-per-instance={} read-ratio={} hot-keys={} key-space={} value-size={} duration-s={} syscalls={} page-cache={}",
            config.instances,
            config.threads_per_instance,
            config.read_ratio,
            config.hot_keys,
            config.key_space,
            config.value_size,
            config.duration.as_secs(),
            config.syscalls,
            config.page_cache
        ),
    };
    let sink = open_sink(&config.destination, &header)?;
    let (probe_tx, probe_rx) = crossbeam_channel::bounded(PROBE_CHANNEL_BATCHES);
    let (tid_tx, tid_rx) = crossbeam_channel::bounded(1);
    let sender = {
        let counters = counters.clone();
        std::thread::Builder::new()
            .name("telemetry-sender".to_string())
            .spawn(move || {
                let _ = tid_tx.send(gettid());
                Ok(run_sender(sink, app_rx, probe_rx, epoch, counters)?)
            })
            .map_err(WorkloadError::io("spawning the sender thread"))?
    };
    let sender_tid = tid_rx
        .recv()
        .map_err(|_| WorkloadError::ThreadPanicked("telemetry sender"))?;

    let probes = if config.syscalls || config.page_cache {
        let probe_config = ProbeConfig {
            syscalls: config.syscalls,
            page_cache: config.page_cache,
            target_tgid: Some(std::process::id()),
            // The controller (this thread) and the sender are the collector, not the app.
            excluded_tids: vec![gettid(), sender_tid],
            ..ProbeConfig::default()
        };
        match ProbeHandle::start(probe_config, probe_tx) {
            Ok(h) => {
                on_event(&format!(
                    "probes attached: syscalls={} page-cache={}",
                    config.syscalls, config.page_cache
                ));
                Some(h)
            }
            Err(e) => {
                shared.stop.store(true, Ordering::Relaxed);
                return Err(e.into());
            }
        }
    } else {
        drop(probe_tx);
        None
    };
    shared.telemetry_on.store(true, Ordering::Release);

    let start = Instant::now();
    let ops_at_start = shared.ops.load(Ordering::Relaxed);
    let mut last = Progress::default();
    let mut last_sent = (0u64, 0u64, 0u64);
    let mut last_dropped = 0u64;
    let mut last_ops = ops_at_start;
    let mut second = 0u64;
    while start.elapsed() < config.duration {
        second += 1;
        let next = start + Duration::from_secs(second);
        while Instant::now() < next {
            std::thread::sleep(
                Duration::from_millis(50).min(next.saturating_duration_since(Instant::now())),
            );
            drop_timer.tick(on_event);
        }
        let sent = (
            counters.kv_sent.load(Ordering::Relaxed),
            counters.syscall_sent.load(Ordering::Relaxed),
            counters.page_cache_sent.load(Ordering::Relaxed),
        );
        let probe_stats = probes.as_ref().map(ProbeHandle::stats).unwrap_or_default();
        let dropped = counters.app_dropped.load(Ordering::Relaxed)
            + probe_stats.channel_drops
            + probe_stats.kernel_drops();
        let ops = shared.ops.load(Ordering::Relaxed);
        last = Progress {
            second,
            app: sent.0 - last_sent.0,
            syscall: sent.1 - last_sent.1,
            page_cache: sent.2 - last_sent.2,
            packet: None,
            total: (sent.0 + sent.1 + sent.2) - (last_sent.0 + last_sent.1 + last_sent.2),
            dropped: dropped - last_dropped,
            ops: ops - last_ops,
        };
        on_progress(&last);
        (last_sent, last_dropped, last_ops) = (sent, dropped, ops);
    }
    let seconds = start.elapsed().as_secs_f64();
    let ops = shared.ops.load(Ordering::Relaxed) - ops_at_start;
    shared.stop.store(true, Ordering::Relaxed);
    let probe_stats = match probes {
        Some(p) => p.stop()?,
        None => ProbeStats::default(),
    };
    let _ = last;
    Ok((
        Summary {
            seconds,
            ops,
            probes: probe_stats,
            ..Summary::default()
        },
        sender,
    ))
}

/// Drops the page cache every `interval` (needs root; failures are reported once).
struct DropCaches {
    interval: Option<Duration>,
    next: Instant,
    warned: bool,
}

impl DropCaches {
    fn new(interval: Option<Duration>) -> DropCaches {
        DropCaches {
            interval,
            next: Instant::now() + interval.unwrap_or_default(),
            warned: false,
        }
    }

    fn tick(&mut self, on_event: &mut impl FnMut(&str)) {
        let Some(interval) = self.interval else {
            return;
        };
        if Instant::now() < self.next {
            return;
        }
        self.next = Instant::now() + interval;
        if let Err(e) = std::fs::write(Path::new(DROP_CACHES), "1") {
            if !self.warned {
                on_event(&format!(
                    "cannot drop caches through {DROP_CACHES}: {e} (needs root)"
                ));
                self.warned = true;
            }
        }
    }
}
