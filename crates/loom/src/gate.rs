//! A bound on one listener's open connections, shared by every server in
//! front of the store (telemetry stream, InfluxQL HTTP, OTLP).
//!
//! A listener asks [`ConnectionGate::enter`] for every accepted connection
//! and holds the [`Admission`] as long as the connection is open; over the
//! limit the connection is closed at once (refused). Refusals and timeouts
//! are counted and logged at most once per [`LOG_INTERVAL`] per gate, so a
//! flood of connections cannot flood the log.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shortest time between two log lines of one gate.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// One listener's connection bound and counts.
#[derive(Debug)]
pub struct ConnectionGate {
    name: String,
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
    timed_out: AtomicU64,
    log: Mutex<LogState>,
}

/// What happened since the last log line.
#[derive(Debug, Default)]
struct LogState {
    last: Option<Instant>,
    refused: u64,
    timed_out: u64,
}

/// An open connection's place under the limit; dropping it frees the place.
#[derive(Debug)]
pub struct Admission(Arc<ConnectionGate>);

impl Admission {
    /// The gate it belongs to.
    pub fn gate(&self) -> &ConnectionGate {
        &self.0
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnectionGate {
    /// A gate named `name` (the listener, in log lines) letting at most
    /// `max` connections be open at once (0 is taken as 1).
    pub fn new(name: impl Into<String>, max: usize) -> Arc<Self> {
        Arc::new(ConnectionGate {
            name: name.into(),
            max: max.max(1),
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            log: Mutex::new(LogState::default()),
        })
    }

    /// A place for one more connection, or `None` (counted and logged as
    /// refused) when `max` are open.
    pub fn enter(self: &Arc<Self>) -> Option<Admission> {
        let entered = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok();
        if entered {
            return Some(Admission(Arc::clone(self)));
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        self.note(|s| s.refused += 1);
        None
    }

    /// Counts (and logs, once per interval) a connection closed because it
    /// stayed idle or sent too slowly past its timeout.
    pub fn timed_out(&self) {
        self.timed_out.fetch_add(1, Ordering::Relaxed);
        self.note(|s| s.timed_out += 1);
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The limit.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections refused so far (the limit was reached).
    pub fn refused_total(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Connections closed so far for idling or sending too slowly.
    pub fn timed_out_total(&self) -> u64 {
        self.timed_out.load(Ordering::Relaxed)
    }

    /// Adds an event to the pending log line and writes it when the last
    /// one is older than [`LOG_INTERVAL`] (the first event logs at once).
    fn note(&self, add: impl FnOnce(&mut LogState)) {
        // A poisoned lock only loses a log line, never a count.
        let Ok(mut s) = self.log.lock() else { return };
        add(&mut s);
        let now = Instant::now();
        if s.last.is_some_and(|t| now.duration_since(t) < LOG_INTERVAL) {
            return;
        }
        log::warn!(
            "{}: {} connections refused (limit {} open), {} closed for idling or sending too slowly, since the last such line",
            self.name,
            s.refused,
            self.max,
            s.timed_out
        );
        *s = LogState {
            last: Some(now),
            ..LogState::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_and_places_come_back() {
        let g = ConnectionGate::new("test", 2);
        let a = g.enter();
        let b = g.enter();
        assert!(a.is_some() && b.is_some());
        assert!(g.enter().is_none());
        assert_eq!((g.open(), g.refused_total()), (2, 1));
        drop(a);
        assert!(g.enter().is_some());
        assert_eq!(g.open(), 2);
        g.timed_out();
        assert_eq!(g.timed_out_total(), 1);
    }
}
