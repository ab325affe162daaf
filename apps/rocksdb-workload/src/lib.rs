//! The monitored application of the probe-effect and end-to-end experiments:
//! `instances` embedded RocksDB databases, each loaded by
//! `threads_per_instance` threads doing mostly reads of a small hot key range
//! and writes over a large one. Every operation becomes a KV op record; the
//! eBPF probes can add syscall and page-cache records of this very process.
//!
//! Timeline (the shared [`workload::run`]): open and load the databases, run
//! the workers for the warmup (no telemetry), then start telemetry (sender
//! thread, probes) and measure for the configured duration. Record
//! timestamps are µs since the end of the warmup, on CLOCK_MONOTONIC (the
//! probes' clock).

mod config;
mod drop_caches;
mod error;
mod kv;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use probes::ProbeConfig;
use rocksdb::DB;
use telemetry::RecordingHeader;
use workload::{Progress, Report, RunSettings, Shared, WorkerFn, Workload};

pub use config::{Destination, WorkloadConfig};
pub use error::WorkloadError;
pub use workload::Summary;

use drop_caches::DropCaches;

/// Runs the workload; calls `on_progress` once per second of the measured
/// run and `on_event` with milestones (databases opened, warmup, probes
/// attached). Setting `interrupted` ends the run early but cleanly.
pub fn run(
    config: WorkloadConfig,
    interrupted: &AtomicBool,
    mut on_progress: impl FnMut(&Progress),
    mut on_event: impl FnMut(&str),
) -> Result<Summary, WorkloadError> {
    config.validate()?;
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
    let mut rocksdb = RocksDb {
        drop_caches: DropCaches::new(config.drop_caches_interval),
        config: Arc::new(config),
        dbs,
    };
    let report = Report {
        on_progress: &mut on_progress,
        on_event: &mut on_event,
    };
    workload::run(&mut rocksdb, interrupted, report)
}

/// The open databases and what the shared run asks of them.
struct RocksDb {
    config: Arc<WorkloadConfig>,
    dbs: Vec<Arc<DB>>,
    drop_caches: DropCaches,
}

impl Workload for RocksDb {
    type Error = WorkloadError;

    fn settings(&self) -> RunSettings {
        RunSettings {
            duration: self.config.duration,
            warmup: self.config.warmup,
            destination: self.config.destination.clone(),
            batch_size: self.config.batch_size,
            channel_batches: self.config.channel_batches,
        }
    }

    fn header(&self) -> RecordingHeader {
        let c = &self.config;
        RecordingHeader {
            workload: "rocksdb".to_string(),
            phase: c.phase().to_string(),
            synthetic: false,
            description: format!(
                "live rocksdb-workload: instances={} threads-per-instance={} read-ratio={} hot-keys={} key-space={} value-size={} duration-s={} syscalls={} page-cache={}",
                c.instances,
                c.threads_per_instance,
                c.read_ratio,
                c.hot_keys,
                c.key_space,
                c.value_size,
                c.duration.as_secs(),
                c.syscalls,
                c.page_cache
            ),
        }
    }

    fn workers(&self) -> usize {
        self.dbs.len() * self.config.threads_per_instance
    }

    /// Worker `index` runs on database `index / threads_per_instance`.
    fn worker(&self, index: usize, shared: &Arc<Shared>) -> (String, WorkerFn<WorkloadError>) {
        let per_instance = self.config.threads_per_instance;
        let (i, t) = (index / per_instance, index % per_instance);
        let (db, config, shared) = (self.dbs[i].clone(), self.config.clone(), shared.clone());
        let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul((i * 1000 + t + 1) as u64);
        let body: WorkerFn<WorkloadError> =
            Box::new(move |buffer| kv::run_worker(db, config, seed, shared, buffer));
        (format!("kv-{i}-{t}"), body)
    }

    fn probes(&self, collector_tids: &[u32]) -> Option<(ProbeConfig, String)> {
        let c = &self.config;
        (c.syscalls || c.page_cache).then(|| {
            let config = ProbeConfig {
                syscalls: c.syscalls,
                page_cache: c.page_cache,
                target_tgid: Some(std::process::id()),
                // The controller and the sender are the collector, not the app.
                excluded_tids: collector_tids.to_vec(),
                ..ProbeConfig::default()
            };
            let attached = format!(
                "probes attached: syscalls={} page-cache={}",
                c.syscalls, c.page_cache
            );
            (config, attached)
        })
    }

    fn tick(&mut self, on_event: &mut dyn FnMut(&str)) {
        self.drop_caches.tick(on_event);
    }
}
