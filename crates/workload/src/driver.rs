//! The run every live workload shares: start the application threads, warm
//! up without telemetry, start telemetry (sender thread, probes), measure
//! with one [`Progress`] per second, then stop and drain. What differs
//! between workloads (their client, its operations, their probes) is the
//! [`Workload`] trait.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use probes::{ProbeConfig, ProbeEvent, ProbeHandle, ProbeStats};
use telemetry::{Record, RecordingHeader};

use crate::{
    gettid, open_sink, run_sender, Counters, Destination, Epoch, Progress, RecordBuffer, RunError,
    Summary,
};

/// Batches the probe consumer may queue for the sender before dropping.
const PROBE_CHANNEL_BATCHES: usize = 4096;
/// How often the controller checks for the end of an interval or a stop.
const TICK: Duration = Duration::from_millis(50);

/// The settings every workload has (see each workload's config for defaults).
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Measured run time after the warmup.
    pub duration: Duration,
    /// Time before telemetry and measurement start.
    pub warmup: Duration,
    /// Where telemetry goes.
    pub destination: Destination,
    /// Records per batch from each application thread.
    pub batch_size: usize,
    /// Batches the channel to the sender holds before new ones are dropped.
    pub channel_batches: usize,
}

/// State shared by the application threads and the controller.
#[derive(Debug, Default)]
pub struct Shared {
    /// Set to end the application threads.
    pub stop: AtomicBool,
    /// Set when telemetry starts (end of warmup): threads emit KV op records.
    pub telemetry_on: AtomicBool,
    /// CLOCK_MONOTONIC ns of the telemetry epoch; stored before `telemetry_on`.
    pub epoch_ns: AtomicU64,
    /// Operations completed, added by the threads every few operations.
    pub ops: AtomicU64,
    /// Operations turned into KV op records (each one sent or counted as dropped).
    pub recorded: AtomicU64,
    /// Application threads that have ended.
    pub finished: AtomicU64,
}

impl Shared {
    /// The telemetry epoch (ns) once telemetry is on, else `None`: a thread
    /// records its operations only from then on.
    pub fn epoch_if_on(&self) -> Option<u64> {
        self.telemetry_on
            .load(Ordering::Acquire)
            .then(|| self.epoch_ns.load(Ordering::Acquire))
    }
}

/// An application thread's body: runs until [`Shared::stop`] (or its own
/// budget), recording its operations into the buffer.
pub type WorkerFn<E> = Box<dyn FnOnce(RecordBuffer) -> Result<(), E> + Send>;

/// What one live workload brings to the shared run.
pub trait Workload {
    /// The workload's error; the run's own failures convert into it.
    type Error: From<RunError> + Send + 'static;

    /// Durations, destination and batch sizes.
    fn settings(&self) -> RunSettings;
    /// The recording header: workload name, phase, a description of the run.
    fn header(&self) -> RecordingHeader;
    /// Application threads to start.
    fn workers(&self) -> usize;
    /// Thread `index`'s name and body.
    fn worker(&self, index: usize, shared: &Arc<Shared>) -> (String, WorkerFn<Self::Error>);
    /// The probes to attach, if any, and the line announcing them.
    /// `collector_tids` are this process's telemetry threads (the
    /// controller and the sender), which a probe on this very process excludes.
    fn probes(&self, collector_tids: &[u32]) -> Option<(ProbeConfig, String)>;
    /// Whether the progress line has a `Packets:` part (a packet probe).
    fn has_packets(&self) -> bool {
        false
    }
    /// Called every tick of the warmup and the measured run (e.g. to drop the page cache).
    fn tick(&mut self, _on_event: &mut dyn FnMut(&str)) {}
}

/// Callbacks of a run: a [`Progress`] per measured second, milestones as text.
pub struct Report<'a> {
    /// Called once per second of the measured run.
    pub on_progress: &'a mut dyn FnMut(&Progress),
    /// Called with human-readable milestones (warmup, probes attached).
    pub on_event: &'a mut dyn FnMut(&str),
}

/// The telemetry sender thread (it drains once the channels close).
type SenderThread = JoinHandle<Result<(), RunError>>;

/// What a running measurement holds.
struct Telemetry {
    counters: Arc<Counters>,
    sender: SenderThread,
    probes: Option<ProbeHandle>,
}

/// Runs the workload: threads, warmup, telemetry, measured seconds, drain.
/// Setting `interrupted` (e.g. from a Ctrl-C handler) ends the run early but
/// cleanly; so does a failing application thread or every thread having
/// ended (a request budget). The first error wins: the measurement's, then
/// a thread's, then the sender's.
pub fn run<W: Workload>(
    workload: &mut W,
    interrupted: &AtomicBool,
    report: Report<'_>,
) -> Result<Summary, W::Error> {
    let settings = workload.settings();
    let shared = Arc::new(Shared::default());
    let counters = Arc::new(Counters::default());
    let (app_tx, app_rx) = crossbeam_channel::bounded(settings.channel_batches);
    let threads = spawn_workers(workload, &shared, &counters, &app_tx, settings.batch_size)?;
    drop(app_tx);
    let ends = Ends {
        shared: &shared,
        interrupted,
        workers: threads.len() as u64,
    };

    (report.on_event)(&format!("warmup {} s", settings.warmup.as_secs()));
    let warmup_end = Instant::now() + settings.warmup;
    while Instant::now() < warmup_end && !ends.now() {
        std::thread::sleep(TICK.min(warmup_end.saturating_duration_since(Instant::now())));
        workload.tick(report.on_event);
    }

    let result = measure(workload, &settings, &ends, counters.clone(), app_rx, report);
    shared.stop.store(true, Ordering::Relaxed);
    let thread_error = join_workers(threads);
    let (mut summary, sender) = result?;
    // The threads are gone, so the app channel closes; the probes stopped, so
    // the probe channel closed too: the sender drains both and finishes the sink.
    sender
        .join()
        .map_err(|_| RunError::ThreadPanicked("telemetry sender"))??;
    if let Some(e) = thread_error {
        return Err(e);
    }
    // Counted once the sender drained: every record it delivered is in.
    let c = &counters;
    summary.kv_sent = c.kv_sent.load(Ordering::Relaxed);
    summary.kv_reads_sent = c.kv_reads_sent.load(Ordering::Relaxed);
    summary.syscall_sent = c.syscall_sent.load(Ordering::Relaxed);
    summary.page_cache_sent = c.page_cache_sent.load(Ordering::Relaxed);
    summary.packet_sent = c.packet_sent.load(Ordering::Relaxed);
    summary.app_dropped = c.app_dropped.load(Ordering::Relaxed);
    summary.recorded = shared.recorded.load(Ordering::Relaxed);
    Ok(summary)
}

/// When the run ends early.
struct Ends<'a> {
    shared: &'a Shared,
    interrupted: &'a AtomicBool,
    workers: u64,
}

impl Ends<'_> {
    /// Interrupted, a thread failed (it set `stop`), or every thread ended.
    fn now(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
            || self.shared.stop.load(Ordering::Relaxed)
            || self.shared.finished.load(Ordering::Relaxed) >= self.workers
    }
}

type Worker<E> = JoinHandle<Result<(), E>>;

/// Starts every application thread; each counts itself finished when it
/// ends, and a failing one stops the run.
fn spawn_workers<W: Workload>(
    workload: &W,
    shared: &Arc<Shared>,
    counters: &Arc<Counters>,
    app_tx: &Sender<Vec<Record>>,
    batch_size: usize,
) -> Result<Vec<Worker<W::Error>>, W::Error> {
    let mut threads = Vec::with_capacity(workload.workers());
    for i in 0..workload.workers() {
        let (name, body) = workload.worker(i, shared);
        let buffer = RecordBuffer::new(app_tx.clone(), batch_size, counters.clone());
        let thread_shared = shared.clone();
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let result = body(buffer);
            thread_shared.finished.fetch_add(1, Ordering::Relaxed);
            if result.is_err() {
                thread_shared.stop.store(true, Ordering::Relaxed);
            }
            result
        });
        match spawned {
            Ok(h) => threads.push(h),
            Err(source) => {
                shared.stop.store(true, Ordering::Relaxed);
                let what = "application".to_string();
                return Err(RunError::Spawn { what, source }.into());
            }
        }
    }
    Ok(threads)
}

/// Joins the application threads; returns the first error.
fn join_workers<E: From<RunError>>(threads: Vec<Worker<E>>) -> Option<E> {
    let mut first = None;
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => first = first.or(Some(e)),
            Err(_) => first = first.or(Some(RunError::ThreadPanicked("application").into())),
        }
    }
    first
}

/// Starts telemetry and runs the measured part; returns the partial summary
/// and the sender thread (still draining).
fn measure<W: Workload>(
    workload: &mut W,
    settings: &RunSettings,
    ends: &Ends<'_>,
    counters: Arc<Counters>,
    app_rx: Receiver<Vec<Record>>,
    report: Report<'_>,
) -> Result<(Summary, SenderThread), W::Error> {
    let shared = ends.shared;
    let telemetry = start_telemetry(
        workload,
        settings,
        shared,
        counters,
        app_rx,
        report.on_event,
    )
    .inspect_err(|_| shared.stop.store(true, Ordering::Relaxed))?;
    shared.telemetry_on.store(true, Ordering::Release);

    let start = Instant::now();
    let ops_at_start = shared.ops.load(Ordering::Relaxed);
    let mut last = Totals::at(shared, &telemetry);
    let mut second = 0u64;
    while start.elapsed() < settings.duration && !ends.now() {
        second += 1;
        let next = start + Duration::from_secs(second);
        while Instant::now() < next && !ends.now() {
            std::thread::sleep(TICK.min(next.saturating_duration_since(Instant::now())));
            workload.tick(report.on_event);
        }
        let now = Totals::at(shared, &telemetry);
        (report.on_progress)(&now.progress_since(&last, second, workload.has_packets()));
        last = now;
    }
    let seconds = start.elapsed().as_secs_f64();
    let ops = shared.ops.load(Ordering::Relaxed) - ops_at_start;
    shared.stop.store(true, Ordering::Relaxed);
    let probe_stats = match telemetry.probes {
        Some(p) => p.stop().map_err(RunError::from)?,
        None => ProbeStats::default(),
    };
    let summary = Summary {
        seconds,
        ops,
        probes: probe_stats,
        ..Summary::default()
    };
    Ok((summary, telemetry.sender))
}

/// Opens the destination, starts the sender thread, then the probes.
fn start_telemetry<W: Workload>(
    workload: &W,
    settings: &RunSettings,
    shared: &Shared,
    counters: Arc<Counters>,
    app_rx: Receiver<Vec<Record>>,
    on_event: &mut dyn FnMut(&str),
) -> Result<Telemetry, W::Error> {
    let epoch = Epoch::now();
    shared.epoch_ns.store(epoch.start_ns(), Ordering::Release);
    let sink = open_sink(&settings.destination, &workload.header()).map_err(RunError::from)?;
    let (probe_tx, probe_rx) = crossbeam_channel::bounded(PROBE_CHANNEL_BATCHES);
    let (tid_tx, tid_rx) = crossbeam_channel::bounded(1);
    let sender_counters = counters.clone();
    let sender = std::thread::Builder::new()
        .name("telemetry-sender".to_string())
        .spawn(move || {
            let _ = tid_tx.send(gettid());
            run_sender(sink, app_rx, probe_rx, epoch, sender_counters).map_err(RunError::from)
        })
        .map_err(|source| RunError::Spawn {
            what: "sender".to_string(),
            source,
        })?;
    let sender_tid = tid_rx
        .recv()
        .map_err(|_| RunError::ThreadPanicked("telemetry sender"))?;
    let probes = start_probes(workload, &[gettid(), sender_tid], probe_tx, on_event)?;
    Ok(Telemetry {
        counters,
        sender,
        probes,
    })
}

/// Attaches the workload's probes, if it has any; without probes the probe
/// channel closes at once.
fn start_probes<W: Workload>(
    workload: &W,
    collector_tids: &[u32],
    probe_tx: Sender<Vec<ProbeEvent>>,
    on_event: &mut dyn FnMut(&str),
) -> Result<Option<ProbeHandle>, W::Error> {
    let Some((config, attached)) = workload.probes(collector_tids) else {
        return Ok(None);
    };
    let handle = ProbeHandle::start(config, probe_tx).map_err(RunError::from)?;
    on_event(&attached);
    Ok(Some(handle))
}

/// Cumulative counts at one instant, for a progress line's differences.
struct Totals {
    sent: [u64; 4],
    dropped: u64,
    ops: u64,
}

impl Totals {
    fn at(shared: &Shared, telemetry: &Telemetry) -> Totals {
        let c = &telemetry.counters;
        let probe_stats = telemetry
            .probes
            .as_ref()
            .map(ProbeHandle::stats)
            .unwrap_or_default();
        Totals {
            sent: [
                c.kv_sent.load(Ordering::Relaxed),
                c.syscall_sent.load(Ordering::Relaxed),
                c.page_cache_sent.load(Ordering::Relaxed),
                c.packet_sent.load(Ordering::Relaxed),
            ],
            dropped: c.app_dropped.load(Ordering::Relaxed)
                + probe_stats.channel_drops
                + probe_stats.kernel_drops(),
            ops: shared.ops.load(Ordering::Relaxed),
        }
    }

    fn progress_since(&self, last: &Totals, second: u64, packets: bool) -> Progress {
        let delta = |i: usize| self.sent[i] - last.sent[i];
        Progress {
            second,
            app: delta(0),
            syscall: delta(1),
            page_cache: delta(2),
            packet: packets.then(|| delta(3)),
            total: delta(0) + delta(1) + delta(2) + delta(3),
            dropped: self.dropped - last.dropped,
            ops: self.ops - last.ops,
        }
    }
}
