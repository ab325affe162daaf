//! The Valkey workload: a live key-value server on loopback, monitored.
//!
//! Starts `valkey-server` (or `redis-server`) on 127.0.0.1 with its own
//! config and temporary data directory (no persistence), loads `records`
//! keys, then `clients` connections run a YCSB-A-like mix (reads and updates
//! of zipfian or uniform keys). Every request becomes a KV op record (client
//! id, read/write, start µs, latency µs). The probes watch the *server*:
//! syscall latency filtered by its process (P2) and its port's packets at
//! loopback's tcx ingress (P3).
//!
//! Timeline (the shared [`workload::run`]): start and load the server, run
//! the clients for the warmup (no telemetry), then start telemetry (sender
//! thread, probes) and measure for the configured duration. Record
//! timestamps are µs since the end of the warmup, on CLOCK_MONOTONIC (the
//! probes' clock). The server is stopped when the run ends, fails or is
//! interrupted.

mod client;
mod config;
mod error;
mod keys;
mod server;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use probes::ProbeConfig;
use telemetry::RecordingHeader;
use workload::{Progress, Report, RunSettings, Shared, WorkerFn, Workload};

pub use config::{Destination, KeyDistribution, WorkloadConfig};
pub use error::WorkloadError;
pub use keys::{key, KeyChooser};
pub use server::Server;

/// Totals of a finished run, and the server it ran against.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// The run's totals (requests, records sent and dropped, probe statistics).
    pub run: workload::Summary,
    /// The server's process id.
    pub server_pid: u32,
    /// The server's port on 127.0.0.1.
    pub port: u16,
}

/// Runs the workload; calls `on_progress` once per second of the measured
/// run and `on_event` with milestones. Setting `interrupted` (e.g. from a
/// Ctrl-C handler) ends the run early but cleanly: telemetry is flushed,
/// the probes are detached and the server is stopped.
pub fn run(
    config: WorkloadConfig,
    interrupted: &AtomicBool,
    mut on_progress: impl FnMut(&Progress),
    mut on_event: impl FnMut(&str),
) -> Result<Summary, WorkloadError> {
    config.validate()?;
    let chooser = Arc::new(KeyChooser::new(config.records, config.distribution)?);
    let server = Server::start(config.server_binary.as_deref(), config.port)?;
    on_event(&format!(
        "started {} (pid {}) on 127.0.0.1:{}",
        server.binary().display(),
        server.pid(),
        server.port()
    ));
    client::load(&server.url(), &config)?;
    on_event(&format!("loaded {} records", config.records));
    let mut valkey = Valkey {
        url: server.url(),
        config: Arc::new(config),
        chooser,
        server,
    };
    let report = Report {
        on_progress: &mut on_progress,
        on_event: &mut on_event,
    };
    let run = workload::run(&mut valkey, interrupted, report)?;
    Ok(Summary {
        run,
        server_pid: valkey.server.pid(),
        port: valkey.server.port(),
    })
}

/// The running server, its clients' settings, and what the shared run asks of them.
struct Valkey {
    config: Arc<WorkloadConfig>,
    chooser: Arc<KeyChooser>,
    server: Server,
    url: String,
}

impl Workload for Valkey {
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
            workload: "valkey".to_string(),
            phase: c.phase().to_string(),
            synthetic: false,
            description: format!(
                "live valkey-workload: server={} port={} records={} clients={} read-ratio={} distribution={:?} value-size={} duration-s={} syscalls={} packets={}",
                self.server.binary().display(),
                self.server.port(),
                c.records,
                c.clients,
                c.read_ratio,
                c.distribution,
                c.value_size,
                c.duration.as_secs(),
                c.syscalls,
                c.packets
            ),
        }
    }

    fn workers(&self) -> usize {
        self.config.clients
    }

    /// Client `index` is the KV op records' `thread_id`.
    fn worker(&self, index: usize, shared: &Arc<Shared>) -> (String, WorkerFn<WorkloadError>) {
        let (config, shared) = (self.config.clone(), shared.clone());
        let (chooser, url) = (self.chooser.clone(), self.url.clone());
        let id = index as u32;
        let body: WorkerFn<WorkloadError> = Box::new(move |buffer| {
            client::run_client(id, &url, &config, &chooser, &shared, buffer)
        });
        (format!("client-{index}"), body)
    }

    fn probes(&self, _collector_tids: &[u32]) -> Option<(ProbeConfig, String)> {
        let c = &self.config;
        (c.syscalls || c.packets).then(|| {
            let config = ProbeConfig {
                syscalls: c.syscalls,
                page_cache: false,
                packets: c.packets.then_some(self.server.port()),
                // The server is another process: nothing of ours to exclude.
                target_tgid: Some(self.server.pid()),
                ..ProbeConfig::default()
            };
            let attached = format!(
                "probes attached to the server: syscalls={} packets={} (port {})",
                c.syscalls,
                c.packets,
                self.server.port()
            );
            (config, attached)
        })
    }

    fn has_packets(&self) -> bool {
        true
    }
}
