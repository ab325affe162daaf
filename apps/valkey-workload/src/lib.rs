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
//! Timeline: start and load the server, run the clients for the warmup (no
//! telemetry), then start telemetry (sender thread, probes) and measure for
//! the configured duration. Record timestamps are µs since the end of the
//! warmup, on CLOCK_MONOTONIC (the probes' clock). The server is stopped when
//! the run ends, fails or is interrupted.

mod client;
mod config;
mod error;
mod keys;
mod server;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use probes::{ProbeConfig, ProbeHandle, ProbeStats};
use telemetry::RecordingHeader;
use workload_pipeline::{open_sink, run_sender, Counters, Epoch, Progress, RecordBuffer};

pub use config::{Destination, KeyDistribution, WorkloadConfig};
pub use error::WorkloadError;
pub use keys::{key, KeyChooser};
pub use server::Server;

use client::ClientShared;

/// Batches the probe consumer may queue for the sender before dropping.
const PROBE_CHANNEL_BATCHES: usize = 4096;
/// How often the controller checks for the end of an interval or a stop.
const TICK: Duration = Duration::from_millis(50);

/// Totals of a finished run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// Measured time (after warmup), s.
    pub seconds: f64,
    /// Requests completed in the measured time.
    pub ops: u64,
    /// Requests turned into KV op records (each was sent or dropped).
    pub recorded: u64,
    /// KV op records handed to the destination.
    pub kv_sent: u64,
    /// Syscall records handed to the destination.
    pub syscall_sent: u64,
    /// Packet records handed to the destination.
    pub packet_sent: u64,
    /// KV op records dropped because the channel to the sender was full.
    pub app_dropped: u64,
    /// Probe statistics (events, kernel drops, probe channel drops).
    pub probes: ProbeStats,
    /// The server's process id.
    pub server_pid: u32,
    /// The server's port on 127.0.0.1.
    pub port: u16,
}

impl Summary {
    /// Requests per second over the measured time.
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Records handed to the destination.
    pub fn sent(&self) -> u64 {
        self.kv_sent + self.syscall_sent + self.packet_sent
    }

    /// Records lost anywhere (app channel, probe channel, kernel ring buffers).
    pub fn dropped(&self) -> u64 {
        self.app_dropped + self.probes.channel_drops + self.probes.kernel_drops()
    }
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
    let config = Arc::new(config);
    let chooser = Arc::new(KeyChooser::new(config.records, config.distribution)?);
    let server = Server::start(config.server_binary.as_deref(), config.port)?;
    let url = server.url();
    on_event(&format!(
        "started {} (pid {}) on 127.0.0.1:{}",
        server.binary().display(),
        server.pid(),
        server.port()
    ));
    client::load(&url, &config)?;
    on_event(&format!("loaded {} records", config.records));

    let shared = Arc::new(ClientShared::default());
    let counters = Arc::new(Counters::default());
    let (app_tx, app_rx) = crossbeam_channel::bounded(config.channel_batches);
    let mut clients: Vec<JoinHandle<Result<(), WorkloadError>>> = Vec::new();
    for i in 0..config.clients {
        let (cfg, sh, ch, url) = (config.clone(), shared.clone(), chooser.clone(), url.clone());
        let buffer = RecordBuffer::new(app_tx.clone(), config.batch_size, counters.clone());
        let id = i as u32;
        let spawned = std::thread::Builder::new()
            .name(format!("client-{i}"))
            .spawn(move || client::run_client(id, &url, &cfg, &ch, &sh, buffer));
        match spawned {
            Ok(h) => clients.push(h),
            Err(e) => {
                shared.stop.store(true, Ordering::Relaxed);
                return Err(WorkloadError::io("spawning a client thread")(e));
            }
        }
    }
    drop(app_tx);

    on_event(&format!("warmup {} s", config.warmup.as_secs()));
    let warmup_end = Instant::now() + config.warmup;
    while Instant::now() < warmup_end && !should_end(&shared, &config, interrupted) {
        std::thread::sleep(TICK.min(warmup_end - Instant::now()));
    }

    let result = measure(
        &config,
        &server,
        &shared,
        &counters,
        app_rx,
        interrupted,
        &mut on_progress,
        &mut on_event,
    );
    shared.stop.store(true, Ordering::Relaxed);
    let mut client_error = None;
    for c in clients {
        match c.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => client_error = client_error.or(Some(e)),
            Err(_) => client_error = client_error.or(Some(WorkloadError::ThreadPanicked("client"))),
        }
    }
    let (mut summary, sender) = result?;
    // Clients are gone, so the app channel closes; the probes stopped, so the
    // probe channel closed too: the sender drains both and finishes the sink.
    match sender.join() {
        Ok(r) => r?,
        Err(_) => return Err(WorkloadError::ThreadPanicked("telemetry sender")),
    }
    if let Some(e) = client_error {
        return Err(e);
    }
    summary.recorded = shared.recorded.load(Ordering::Relaxed);
    summary.kv_sent = counters.kv_sent.load(Ordering::Relaxed);
    summary.syscall_sent = counters.syscall_sent.load(Ordering::Relaxed);
    summary.packet_sent = counters.packet_sent.load(Ordering::Relaxed);
    summary.app_dropped = counters.app_dropped.load(Ordering::Relaxed);
    summary.server_pid = server.pid();
    summary.port = server.port();
    drop(server);
    Ok(summary)
}

/// The run ends early: interrupted, a client failed, or every client used
/// its request budget.
fn should_end(shared: &ClientShared, config: &WorkloadConfig, interrupted: &AtomicBool) -> bool {
    interrupted.load(Ordering::Relaxed)
        || shared.stop.load(Ordering::Relaxed)
        || shared.finished.load(Ordering::Relaxed) >= config.clients as u64
}

type Sender = JoinHandle<Result<(), WorkloadError>>;

/// Starts telemetry and runs the measured part; returns the partial summary
/// and the sender thread (still draining).
#[allow(clippy::too_many_arguments)]
#[allow(clippy::too_many_lines)] // Over the 100-line limit from before it was enforced; split pending (issue 20 report).
fn measure(
    config: &Arc<WorkloadConfig>,
    server: &Server,
    shared: &Arc<ClientShared>,
    counters: &Arc<Counters>,
    app_rx: crossbeam_channel::Receiver<Vec<telemetry::Record>>,
    interrupted: &AtomicBool,
    on_progress: &mut impl FnMut(&Progress),
    on_event: &mut impl FnMut(&str),
) -> Result<(Summary, Sender), WorkloadError> {
    let epoch = Epoch::now();
    shared.epoch_ns.store(epoch.start_ns(), Ordering::Release);
    let header = RecordingHeader {
        workload: "valkey".to_string(),
        phase: config.phase().to_string(),
        synthetic: false,
        description: format!(
            "live valkey-workload: server={} port={} records={} clients={} read-ratio={} distribution={:?} value-size={} duration-s={} syscalls={} packets={}",
            server.binary().display(),
            server.port(),
            config.records,
            config.clients,
            config.read_ratio,
            config.distribution,
            config.value_size,
            config.duration.as_secs(),
            config.syscalls,
            config.packets
        ),
    };
    let sink = open_sink(&config.destination, &header)?;
    let (probe_tx, probe_rx) = crossbeam_channel::bounded(PROBE_CHANNEL_BATCHES);
    let sender = {
        let counters = counters.clone();
        std::thread::Builder::new()
            .name("telemetry-sender".to_string())
            .spawn(move || Ok(run_sender(sink, app_rx, probe_rx, epoch, counters)?))
            .map_err(WorkloadError::io("spawning the sender thread"))?
    };

    let probes = if config.syscalls || config.packets {
        let probe_config = ProbeConfig {
            syscalls: config.syscalls,
            page_cache: false,
            packets: config.packets.then_some(server.port()),
            // The server is another process: nothing of ours to exclude.
            target_tgid: Some(server.pid()),
            ..ProbeConfig::default()
        };
        match ProbeHandle::start(probe_config, probe_tx) {
            Ok(h) => {
                on_event(&format!(
                    "probes attached to the server: syscalls={} packets={} (port {})",
                    config.syscalls,
                    config.packets,
                    server.port()
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
    let mut last_sent = [0u64; 3];
    let mut last_dropped = 0u64;
    let mut last_ops = ops_at_start;
    let mut second = 0u64;
    while start.elapsed() < config.duration && !should_end(shared, config, interrupted) {
        second += 1;
        let next = start + Duration::from_secs(second);
        while Instant::now() < next && !should_end(shared, config, interrupted) {
            std::thread::sleep(TICK.min(next.saturating_duration_since(Instant::now())));
        }
        let sent = [
            counters.kv_sent.load(Ordering::Relaxed),
            counters.syscall_sent.load(Ordering::Relaxed),
            counters.packet_sent.load(Ordering::Relaxed),
        ];
        let probe_stats = probes.as_ref().map(ProbeHandle::stats).unwrap_or_default();
        let dropped = counters.app_dropped.load(Ordering::Relaxed)
            + probe_stats.channel_drops
            + probe_stats.kernel_drops();
        let ops = shared.ops.load(Ordering::Relaxed);
        let delta = |i: usize| sent[i] - last_sent[i];
        on_progress(&Progress {
            second,
            app: delta(0),
            syscall: delta(1),
            page_cache: 0,
            packet: Some(delta(2)),
            total: delta(0) + delta(1) + delta(2),
            dropped: dropped - last_dropped,
            ops: ops - last_ops,
        });
        (last_sent, last_dropped, last_ops) = (sent, dropped, ops);
    }
    let seconds = start.elapsed().as_secs_f64();
    let ops = shared.ops.load(Ordering::Relaxed) - ops_at_start;
    shared.stop.store(true, Ordering::Relaxed);
    let probe_stats = match probes {
        Some(p) => p.stop()?,
        None => ProbeStats::default(),
    };
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
