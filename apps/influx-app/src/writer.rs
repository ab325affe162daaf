//! Concurrent `/write` senders: `--influx-connections` tasks take encoded
//! bodies from one bounded queue and POST them to influxd.
//!
//! A failed write is not retried: its points are counted as dropped (the
//! endpoint keeps pace with the stream, as the published InfluxDB endpoint
//! does) and the error is logged: the first failure of a streak at once,
//! then a summary at most once per [`WriterConfig::error_log_interval`], and
//! a line when writes succeed again. The HTTP client reconnects by itself, so
//! writing resumes as soon as influxd answers again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, Mutex};

use crate::client::Client;
use crate::counters::Counters;

/// One /write request body.
pub struct Body {
    /// Line protocol.
    pub bytes: Bytes,
    /// Points in it.
    pub points: u64,
}

/// Writer settings.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Concurrent writers (HTTP connections).
    pub connections: usize,
    /// Pause of a writer after a failed write, so a dead influxd is not hammered.
    pub failure_backoff: Duration,
    /// Least time between two "writes failing" log lines.
    pub error_log_interval: Duration,
}

#[derive(Default)]
struct Streak {
    failing: bool,
    failures: u64,
    points: u64,
    last_log: Option<Instant>,
}

/// Starts the writers on `rt`; they end when every sender of `rx` is dropped
/// and the queue is empty.
pub fn spawn(
    rt: &tokio::runtime::Handle,
    client: Client,
    cfg: WriterConfig,
    rx: mpsc::Receiver<Body>,
    counters: Arc<Counters>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let rx = Arc::new(Mutex::new(rx));
    let streak = Arc::new(std::sync::Mutex::new(Streak::default()));
    (0..cfg.connections.max(1))
        .map(|_| {
            let (rx, client, counters, streak, cfg) = (
                rx.clone(),
                client.clone(),
                counters.clone(),
                streak.clone(),
                cfg.clone(),
            );
            rt.spawn(async move {
                loop {
                    // The lock is held only while waiting for the next body.
                    let next = rx.lock().await.recv().await;
                    let Some(body) = next else { break };
                    match client.write(body.bytes, body.points).await {
                        Ok(()) => {
                            Counters::add(&counters.points_written, body.points);
                            Counters::add(&counters.writes, 1);
                            succeeded(&streak);
                        }
                        Err(e) => {
                            Counters::add(&counters.write_errors, 1);
                            Counters::add(&counters.write_failed_points, body.points);
                            Counters::add(&counters.recv.records_dropped, body.points);
                            failed(&streak, &e, body.points, cfg.error_log_interval);
                            tokio::time::sleep(cfg.failure_backoff).await;
                        }
                    }
                }
            })
        })
        .collect()
}

fn succeeded(streak: &std::sync::Mutex<Streak>) {
    let Ok(mut s) = streak.lock() else { return };
    if s.failing {
        log::warn!(
            "influxd writes succeed again after {} failed writes ({} points dropped)",
            s.failures,
            s.points
        );
        *s = Streak::default();
    }
}

fn failed(streak: &std::sync::Mutex<Streak>, e: &crate::Error, points: u64, every: Duration) {
    let Ok(mut s) = streak.lock() else { return };
    s.failures += 1;
    s.points += points;
    let first = !s.failing;
    s.failing = true;
    if first || s.last_log.is_none_or(|t| t.elapsed() >= every) {
        log::error!(
            "influxd write failed ({} failed writes, {} points dropped in this streak): {}",
            s.failures,
            s.points,
            crate::error::chain(e)
        );
        s.last_log = Some(Instant::now());
    }
}
