//! A bound on one listener's open connections, shared by every server in
//! front of the store (telemetry stream, InfluxQL HTTP, OTLP).
//!
//! A listener asks [`ConnectionGate::enter`] for every accepted connection
//! and holds the [`Admission`] as long as the connection is open. At the
//! limit, the open connection idle the longest (at least [`EVICT_IDLE`]
//! without activity, see [`Admission::touch`]) is told to close
//! ([`Admission::evicted`]) and the new one takes its place: a flood of
//! idle connections cannot lock a working client out. With none idle
//! that long the new connection is closed at once (refused). Refusals and timeouts
//! are counted and logged at most once per [`LOG_INTERVAL`] per gate, so a
//! flood of connections cannot flood the log.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shortest time between two log lines of one gate.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// A connection idle this long may be closed to make room at the limit.
pub const EVICT_IDLE: Duration = Duration::from_secs(1);

/// One open connection's activity, shared with the gate.
#[derive(Debug)]
struct Slot {
    /// Last activity, ms since the gate's epoch.
    active_ms: AtomicU64,
    /// Told to close to make room.
    evicted: AtomicBool,
}

/// One listener's connection bound and counts.
#[derive(Debug)]
pub struct ConnectionGate {
    name: String,
    max: usize,
    epoch: Instant,
    slots: Mutex<Vec<Arc<Slot>>>,
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
pub struct Admission {
    gate: Arc<ConnectionGate>,
    slot: Arc<Slot>,
}

impl Admission {
    /// The gate it belongs to.
    pub fn gate(&self) -> &ConnectionGate {
        &self.gate
    }

    /// Notes activity (a frame, a request, an answer): the connection is
    /// not idle now.
    pub fn touch(&self) {
        self.slot
            .active_ms
            .store(self.gate.now_ms(), Ordering::Relaxed);
    }

    /// Whether the gate wants this connection closed to make room for a
    /// new one (it was idle the longest); the connection checks it when
    /// its reads wake up and then closes.
    pub fn evicted(&self) -> bool {
        self.slot.evicted.load(Ordering::Relaxed)
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.gate.slots.lock() {
            slots.retain(|s| !Arc::ptr_eq(s, &self.slot));
        }
        self.gate.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnectionGate {
    /// A gate named `name` (the listener, in log lines) letting at most
    /// `max` connections be open at once (0 is taken as 1).
    pub fn new(name: impl Into<String>, max: usize) -> Arc<Self> {
        Arc::new(ConnectionGate {
            name: name.into(),
            max: max.max(1),
            epoch: Instant::now(),
            slots: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            log: Mutex::new(LogState::default()),
        })
    }

    /// A place for one more connection: free, or made by evicting the
    /// connection idle the longest (at least [`EVICT_IDLE`]); `None`
    /// (counted and logged as refused) when `max` are open and busy.
    pub fn enter(self: &Arc<Self>) -> Option<Admission> {
        let now = self.now_ms();
        let slot = Arc::new(Slot {
            active_ms: AtomicU64::new(now),
            evicted: AtomicBool::new(false),
        });
        let admitted = match self.slots.lock() {
            Ok(mut slots) => {
                // Evicted connections are on their way out (within a
                // read tick): they no longer count against the limit.
                let live = slots
                    .iter()
                    .filter(|s| !s.evicted.load(Ordering::Relaxed))
                    .count();
                let room = live < self.max || {
                    let idle_ms = u64::try_from(EVICT_IDLE.as_millis()).unwrap_or(u64::MAX);
                    let oldest = slots
                        .iter()
                        .filter(|s| !s.evicted.load(Ordering::Relaxed))
                        .min_by_key(|s| s.active_ms.load(Ordering::Relaxed))
                        .filter(|s| {
                            now.saturating_sub(s.active_ms.load(Ordering::Relaxed)) >= idle_ms
                        });
                    match oldest {
                        Some(s) => {
                            s.evicted.store(true, Ordering::Relaxed);
                            true
                        }
                        None => false,
                    }
                };
                if room {
                    slots.push(Arc::clone(&slot));
                }
                room
            }
            Err(_) => false,
        };
        if admitted {
            self.open.fetch_add(1, Ordering::AcqRel);
            return Some(Admission {
                gate: Arc::clone(self),
                slot,
            });
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        self.note(|s| s.refused += 1);
        None
    }

    /// Counts (and logs, once per interval) a connection closed because it
    /// stayed idle or sent too slowly past its timeout, or was evicted.
    pub fn timed_out(&self) {
        self.timed_out.fetch_add(1, Ordering::Relaxed);
        self.note(|s| s.timed_out += 1);
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Connections open now (evicted ones still closing included).
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
        let c = g.enter();
        assert!(c.is_some());
        assert_eq!(g.open(), 2);
        // Idle past EVICT_IDLE, the oldest makes room for a newcomer.
        std::thread::sleep(EVICT_IDLE + Duration::from_millis(50));
        if let Some(c) = &c {
            c.touch();
        }
        let d = g.enter();
        assert!(d.is_some());
        assert!(b.as_ref().is_some_and(|b| b.evicted()));
        assert!(c.as_ref().is_some_and(|c| !c.evicted()));
        g.timed_out();
        assert_eq!(g.timed_out_total(), 1);
    }
}
