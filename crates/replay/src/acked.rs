//! `tcp-replay --acked`: the recording sent over wire protocol version 2
//! with acknowledgements, through [`ResendingSender`]: every frame is kept
//! until the receiver says it is durable and sent again after a reconnect
//! (a receiver that was killed and restarted gets everything, once).
//!
//! Record times: the receiver stores an acknowledged sender's records at
//! their own wall-clock times (HELLO flag bit 1), so a resent record lands
//! where it landed the first time. The recording's times are shifted by
//! one offset fixed at the start (`now - earliest time of the recording`,
//! printed), plus `n * period` on loop `n`, as a paced replay does; a test
//! finds every record of the recording at `its time + offset`.
//!
//! Pacing and framing are those of a paced replay ([`crate::prepare`]);
//! each prepared version-1 frame becomes one version-2 data frame.

use std::time::{Duration, Instant};

use telemetry::wire::resend::{Connector, ResendConfig, ResendStats, ResendingSender};
use telemetry::wire::{self, Hello, FRAME_HEADER_LEN};

use crate::prepare::{produce, shift_all, Chunk, Framing, Prepared};
use crate::tcp::{Progress, ReplayConfig, ReplayError};

/// Settings of an acknowledged replay beyond [`ReplayConfig`].
pub struct AckedConfig {
    /// The sender's stable id (a restarted receiver knows it by this).
    pub sender_id: u64,
    /// Token for the receiver (empty: none).
    pub token: String,
    /// Bytes of unacknowledged frames kept; the replay waits when full.
    pub max_unacked_bytes: u64,
    /// After the last frame, wait this long for every acknowledgement.
    pub drain_timeout: Duration,
}

/// What an acknowledged replay did.
#[derive(Debug, Clone)]
pub struct AckedSummary {
    /// Frames and records sent (first sends).
    pub frames: u64,
    /// Records sent.
    pub records: u64,
    /// Records acknowledged as durable.
    pub acked: u64,
    /// Frames sent again after reconnects.
    pub resent_frames: u64,
    /// Connections made.
    pub connections: u64,
    /// Frames not acknowledged when the replay ended.
    pub unacked_frames: u64,
    /// Wall-clock seconds from the first frame to the last acknowledgement.
    pub elapsed_s: f64,
    /// Acknowledgement latency p50 / p99 / max, ms.
    pub ack_latency_ms: (f64, f64, f64),
    /// Whether it was stopped early (signal).
    pub stopped: bool,
}

/// The offset event times get on the wire: the recording's earliest time
/// lands at `now_us`.
pub fn wall_offset(rec: &Prepared, now_us: u64) -> u64 {
    now_us.saturating_sub(rec.earliest())
}

/// Replays `cfg.file_path` through a resending sender that connects with
/// `connect`; `offset` is called once with the event-time offset.
pub fn run(
    cfg: &ReplayConfig,
    acked: &AckedConfig,
    connect: Connector,
    mut on_offset: impl FnMut(u64),
    mut progress: impl FnMut(&Progress),
    stop: impl Fn() -> bool,
) -> Result<AckedSummary, ReplayError> {
    let rec = Prepared::load(&cfg.file_path).map_err(|source| ReplayError::Recording {
        path: cfg.file_path.clone(),
        source,
    })?;
    let offset = wall_offset(&rec, wire::sender::now_us());
    on_offset(offset);
    let stats = std::sync::Arc::new(ResendStats::default());
    let mut out = Paced {
        cfg,
        sender: open_sender(acked, connect, stats.clone()),
        first_arrival: rec.first_arrival(),
        offset,
        start: Instant::now(),
        tick: Progress {
            second: 1,
            batches: 0,
            records: 0,
            behind_ms: 0.0,
        },
        scratch: Vec::new(),
    };
    let passes = if cfg.duration_s.is_some() {
        None
    } else {
        Some(1)
    };
    let framing = Framing::for_replay((!cfg.no_wait).then_some(cfg.speed));
    let (tx, chunks) = crossbeam_channel::bounded::<Chunk>(8);
    let (give_back, recycled) = crossbeam_channel::bounded::<Vec<u8>>(10);
    let deadline = cfg.duration_s.map(|d| Duration::from_secs_f64(d.max(0.0)));
    let mut stopped = false;
    let sent: Result<(), ReplayError> = std::thread::scope(|scope| {
        let rec = &rec;
        scope.spawn(move || produce(rec, framing, passes, &tx, &recycled));
        let r = (|| {
            for chunk in chunks.iter() {
                if stop() {
                    stopped = true;
                    break;
                }
                if deadline.is_some_and(|d| out.start.elapsed() >= d) {
                    break;
                }
                let behind_ms = out.wait_until_due(&chunk, &mut progress)?;
                out.send(&chunk, behind_ms, &mut progress)?;
                let _ = give_back.try_send(chunk.bytes);
            }
            Ok(())
        })();
        drop(chunks);
        r
    });
    sent?;
    let drain = if stopped {
        Duration::ZERO
    } else {
        acked.drain_timeout
    };
    let all = out.sender.finish(drain).map_err(|e| send_error(cfg, e))?;
    let summary = summarize(&out.sender, &stats, out.start, stopped);
    if !all && !stopped {
        log::warn!(
            "{} frames were not acknowledged within {:?}",
            summary.unacked_frames,
            acked.drain_timeout
        );
    }
    Ok(summary)
}

/// The resending sender, its HELLO asking for acknowledgements.
fn open_sender(
    acked: &AckedConfig,
    connect: Connector,
    stats: std::sync::Arc<ResendStats>,
) -> ResendingSender {
    let hello = Hello {
        sender_id: acked.sender_id,
        flags: 0,
        next_seq: 1,
        token: acked.token.clone(),
        host: wire::sender::hostname(),
        agent: format!("tcp-replay {}", env!("CARGO_PKG_VERSION")),
    };
    let config = ResendConfig {
        max_unacked_bytes: acked.max_unacked_bytes,
        ..ResendConfig::default()
    };
    ResendingSender::new(connect, hello, config, stats)
}

/// The sending side of a paced acknowledged replay.
struct Paced<'a> {
    cfg: &'a ReplayConfig,
    sender: ResendingSender,
    /// The recording's first arrival time: pacing counts from it.
    first_arrival: u64,
    /// Added to every record's time (see the module comment).
    offset: u64,
    start: Instant,
    /// The progress of the current second.
    tick: Progress,
    scratch: Vec<u8>,
}

impl Paced<'_> {
    /// Waits until `chunk` is due at the replay's speed (not with
    /// `--no-wait`), reading acknowledgements meanwhile; returns how late
    /// it is, ms.
    fn wait_until_due(
        &mut self,
        chunk: &Chunk,
        progress: &mut impl FnMut(&Progress),
    ) -> Result<f64, ReplayError> {
        if self.cfg.no_wait {
            return Ok(0.0);
        }
        let due_us = chunk.arrival_us.saturating_sub(self.first_arrival) as f64 / self.cfg.speed;
        let due = Duration::from_secs_f64(due_us / 1e6);
        loop {
            let now = self.start.elapsed();
            if due <= now {
                return Ok((now - due).as_secs_f64() * 1e3);
            }
            // Acknowledgements are read while waiting.
            self.sender
                .pump((due - now).min(Duration::from_millis(20)))
                .map_err(|e| send_error(self.cfg, e))?;
            report(&mut self.tick, self.start, progress);
        }
    }

    /// Sends each version-1 frame of `chunk` as a version-2 data frame, its
    /// records' times shifted by the offset.
    fn send(
        &mut self,
        chunk: &Chunk,
        behind_ms: f64,
        progress: &mut impl FnMut(&Progress),
    ) -> Result<(), ReplayError> {
        let mut at = 0;
        while at < chunk.bytes.len() {
            let h = wire::parse_header(&chunk.bytes[at..], usize::MAX)
                .map_err(|e| send_error(self.cfg, e))?;
            let body = at + FRAME_HEADER_LEN;
            let end = body + h.payload_len as usize;
            self.scratch.clear();
            self.scratch.extend_from_slice(&chunk.bytes[body..end]);
            shift_all(&mut self.scratch, self.offset);
            self.sender
                .send(0, h.record_count, &self.scratch)
                .map_err(|e| send_error(self.cfg, e))?;
            at = end;
        }
        self.sender.flush();
        self.tick.batches += chunk.frames;
        self.tick.records += chunk.records;
        self.tick.behind_ms = behind_ms;
        report(&mut self.tick, self.start, progress);
        Ok(())
    }
}

/// The summary of a finished replay from the sender's counts.
fn summarize(
    sender: &ResendingSender,
    stats: &ResendStats,
    start: Instant,
    stopped: bool,
) -> AckedSummary {
    let elapsed_s = start.elapsed().as_secs_f64();
    let lat = sender.latencies_us();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() - 1) as f64 * p).round() as usize;
        lat[i] as f64 / 1e3
    };
    let get = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    AckedSummary {
        frames: get(&stats.frames_sent),
        records: get(&stats.records_sent),
        acked: get(&stats.records_acked),
        resent_frames: get(&stats.frames_resent),
        connections: get(&stats.connections),
        unacked_frames: sender.unacked_frames() as u64,
        elapsed_s,
        ack_latency_ms: (pct(0.5), pct(0.99), pct(1.0)),
        stopped,
    }
}

fn send_error(cfg: &ReplayConfig, source: telemetry::WireError) -> ReplayError {
    ReplayError::Send {
        addr: cfg.addr.clone(),
        source,
    }
}

fn report(tick: &mut Progress, start: Instant, progress: &mut impl FnMut(&Progress)) {
    while start.elapsed().as_secs() >= tick.second {
        progress(tick);
        tick.second += 1;
        tick.batches = 0;
        tick.records = 0;
    }
}
