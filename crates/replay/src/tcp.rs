//! Sending a recording over TCP at its recorded pace (`tcp-replay`).
//!
//! Pacing: batch `k` of loop `n` is due at
//! `(arrival_k + n * period - arrival_first) / speed` after the replay start,
//! where `period` is the recording's span (covering both arrival and event
//! timestamps, plus one batch interval). Each loop shifts arrival and event
//! timestamps forward by `period`, so per-source timestamps keep increasing.
//! With `no_wait` batches are sent as fast as the socket takes them. Either
//! way consecutive batches are merged into larger frames (paced: only those
//! due within 1 ms; see [`crate::prepare`]); *batches* count frames sent.
//!
//! *Behind* is how far the sender is behind schedule, in milliseconds: the
//! delay between a batch's due time and when it was handed to the socket
//! (0 when on time; always 0 with `no_wait`).
//!
//! The stream is plain TCP or TLS ([`endpoint::ClientStream`]; `tcp-replay
//! --tls-ca`), set up by the caller.

use std::io::{ErrorKind, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use endpoint::ClientStream;
use telemetry::{RecordingError, WireError};

use crate::prepare::{produce, Chunk, Framing, Prepared};

/// Replay settings.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Recording to send.
    pub file_path: PathBuf,
    /// Endpoint address, e.g. `127.0.0.1:7878`.
    pub addr: String,
    /// Keep looping the recording until this many seconds have passed;
    /// `None` sends it once.
    pub duration_s: Option<f64>,
    /// Pace multiplier (2.0 = twice as fast as recorded).
    pub speed: f64,
    /// Ignore recorded arrival times and send as fast as possible.
    pub no_wait: bool,
    /// Give up if the endpoint does not accept within this many seconds.
    pub connect_timeout_s: f64,
    /// Send at most this many loops (`None`: once without `duration_s`,
    /// else until it ends).
    pub loops: Option<u64>,
}

/// One progress report (once per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Seconds since the replay started (1, 2, ...).
    pub second: u64,
    /// Batches sent during this second.
    pub batches: u64,
    /// Records sent during this second.
    pub records: u64,
    /// Milliseconds behind schedule at the last batch sent.
    pub behind_ms: f64,
}

/// Why the replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The recording was sent (and looped until the duration ran out).
    Finished,
    /// The endpoint closed the connection.
    EndpointClosed,
    /// The caller asked to stop.
    Stopped,
}

/// Totals of a replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Batches sent.
    pub batches: u64,
    /// Records sent.
    pub records: u64,
    /// Bytes written (frames with headers).
    pub bytes: u64,
    /// Loops started over the recording.
    pub loops: u64,
    /// Wall time in seconds.
    pub elapsed_s: f64,
    /// Largest delay behind schedule, ms.
    pub max_behind_ms: f64,
    /// Why it ended.
    pub reason: EndReason,
}

/// Replay failure.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The recording could not be read.
    #[error("reading recording {path}: {source}")]
    Recording {
        /// File path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: RecordingError,
    },
    /// Bad settings.
    #[error("invalid setting: {0}")]
    Config(String),
    /// The endpoint never accepted a connection.
    #[error("endpoint {addr} did not accept a connection within {secs} s: {last_error}")]
    ConnectTimeout {
        /// Address.
        addr: String,
        /// Time waited.
        secs: f64,
        /// Last connection error.
        last_error: String,
    },
    /// Sending failed for a reason other than the endpoint closing.
    #[error("sending to {addr}: {source}")]
    Send {
        /// Address.
        addr: String,
        /// Cause.
        #[source]
        source: WireError,
    },
}

/// Connects to `addr`, retrying every 500 ms and calling `waiting` with the
/// error on each failed attempt, for at most `timeout_s` seconds.
pub fn connect_with_retry(
    addr: &str,
    timeout_s: f64,
    mut waiting: impl FnMut(&std::io::Error),
) -> Result<TcpStream, ReplayError> {
    let start = Instant::now();
    loop {
        let attempt = addr
            .to_socket_addrs()
            .and_then(|mut it| {
                it.next().ok_or_else(|| {
                    std::io::Error::new(ErrorKind::NotFound, "address resolved to nothing")
                })
            })
            .and_then(|sa| TcpStream::connect_timeout(&sa, Duration::from_secs(2)));
        match attempt {
            Ok(s) => return Ok(s),
            Err(e) => {
                if start.elapsed().as_secs_f64() >= timeout_s {
                    return Err(ReplayError::ConnectTimeout {
                        addr: addr.to_string(),
                        secs: timeout_s,
                        last_error: e.to_string(),
                    });
                }
                waiting(&e);
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

fn is_disconnect(e: &WireError) -> bool {
    matches!(e, WireError::Io { source, .. } if matches!(
        source.kind(),
        ErrorKind::BrokenPipe
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::UnexpectedEof
            | ErrorKind::WriteZero
    ))
}

/// Chunks prepared ahead of the sender (about 8 MiB with `--no-wait`).
const CHUNKS_AHEAD: usize = 8;

/// Sleeps until `due` after `start`, in short steps so progress lines
/// stay on time; how far behind schedule the chunk goes out (ms), or
/// `None` when `stop` ended the wait.
fn pace(
    due: Duration,
    start: Instant,
    tick: &mut Progress,
    progress: &mut impl FnMut(&Progress),
    stop: &impl Fn() -> bool,
) -> Option<f64> {
    let now = start.elapsed();
    if due <= now {
        return Some((now - due).as_secs_f64() * 1e3);
    }
    let mut left = due - now;
    while left > Duration::ZERO {
        std::thread::sleep(left.min(Duration::from_millis(100)));
        report(tick, start, progress);
        left = due.saturating_sub(start.elapsed());
        if stop() {
            return None;
        }
    }
    Some(0.0)
}

/// Sends the recording over `stream` (a `TcpStream` or a [`ClientStream`])
/// to the endpoint at `cfg.addr`, and ends the stream cleanly.
///
/// The recording is loaded once; a second thread prepares the frames (see
/// [`crate::prepare`]) while this one sends them. `progress` is called once
/// per second; `stop` is polled between writes and ends the replay early
/// when it returns true.
pub fn run(
    cfg: &ReplayConfig,
    stream: impl Into<ClientStream>,
    mut progress: impl FnMut(&Progress),
    stop: impl Fn() -> bool,
) -> Result<Summary, ReplayError> {
    if !(cfg.speed > 0.0 && cfg.speed.is_finite()) {
        return Err(ReplayError::Config(format!(
            "--speed must be a positive number, got {}",
            cfg.speed
        )));
    }
    let rec = Prepared::load(&cfg.file_path).map_err(|source| ReplayError::Recording {
        path: cfg.file_path.clone(),
        source,
    })?;
    let first_arrival = rec.first_arrival();
    // Sent once without a duration; looped (until the deadline) with one.
    let passes = match (cfg.loops, cfg.duration_s) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(1),
    };
    let framing = Framing::for_replay((!cfg.no_wait).then_some(cfg.speed));
    let (tx, chunks) = crossbeam_channel::bounded::<Chunk>(CHUNKS_AHEAD);
    let (give_back, recycled) = crossbeam_channel::bounded::<Vec<u8>>(CHUNKS_AHEAD + 2);
    let mut stream = stream.into();
    let _ = stream.tcp().set_nodelay(true);
    let start = Instant::now();
    let deadline = cfg.duration_s.map(|d| Duration::from_secs_f64(d.max(0.0)));
    let mut summary = Summary {
        batches: 0,
        records: 0,
        bytes: 0,
        loops: 0,
        elapsed_s: 0.0,
        max_behind_ms: 0.0,
        reason: EndReason::Finished,
    };
    let mut tick = Progress {
        second: 1,
        batches: 0,
        records: 0,
        behind_ms: 0.0,
    };
    let sent = std::thread::scope(|scope| {
        let rec = &rec;
        scope.spawn(move || produce(rec, framing, passes, &tx, &recycled));
        let result = (|| {
            for chunk in chunks.iter() {
                if stop() {
                    summary.reason = EndReason::Stopped;
                    break;
                }
                if deadline.is_some_and(|d| start.elapsed() >= d) {
                    break;
                }
                summary.loops = summary.loops.max(chunk.pass + 1);
                let mut behind_ms = 0.0;
                if !cfg.no_wait {
                    let due_us = chunk.arrival_us.saturating_sub(first_arrival) as f64 / cfg.speed;
                    let due = Duration::from_secs_f64(due_us / 1e6);
                    match pace(due, start, &mut tick, &mut progress, &stop) {
                        Some(ms) => behind_ms = ms,
                        None => {
                            summary.reason = EndReason::Stopped;
                            return Ok(());
                        }
                    }
                }
                if let Err(e) = stream.write_all(&chunk.bytes) {
                    let e = WireError::Io {
                        context: "writing frames",
                        source: e,
                    };
                    if is_disconnect(&e) {
                        summary.reason = EndReason::EndpointClosed;
                        return Ok(());
                    }
                    return Err(ReplayError::Send {
                        addr: cfg.addr.clone(),
                        source: e,
                    });
                }
                summary.batches += chunk.frames;
                summary.records += chunk.records;
                summary.bytes += chunk.bytes.len() as u64;
                summary.max_behind_ms = summary.max_behind_ms.max(behind_ms);
                tick.batches += chunk.frames;
                tick.records += chunk.records;
                tick.behind_ms = behind_ms;
                report(&mut tick, start, &mut progress);
                let _ = give_back.try_send(chunk.bytes);
            }
            Ok(())
        })();
        // Ends the producer: its next send fails.
        drop(chunks);
        result
    });
    sent?;
    let _ = stream.finish();
    summary.elapsed_s = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// Emits one progress line per elapsed second (several if sends stalled).
fn report(tick: &mut Progress, start: Instant, progress: &mut impl FnMut(&Progress)) {
    while start.elapsed().as_secs() >= tick.second {
        progress(tick);
        tick.second += 1;
        tick.batches = 0;
        tick.records = 0;
    }
}
