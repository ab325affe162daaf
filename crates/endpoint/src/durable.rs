//! Waiting until data is durable: "tell me once everything up to position
//! X survives a crash".
//!
//! A position is a number the single writer hands out in increasing order
//! (a commit number of its write-ahead log, say): the writer tells a
//! request which position covers its records, and advances the mark each
//! time a position has been made durable. Any number of request handlers
//! wait for their position, from async code (OTLP, `/write`) or from a
//! thread (a TCP receiver acknowledging frames). Positions that could not
//! be made durable are marked failed, so their waiters learn it at once
//! instead of timing out; the writer marks the mark closed when it stops.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Failed position ranges remembered for late waiters.
const FAILED_KEPT: usize = 64;

/// Why a position is not (and will not be in time) durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotDurable {
    /// The wait's time ran out first; the data may still become durable.
    TimedOut,
    /// Writing it to disk failed.
    Failed,
    /// The writer stopped before the position was reached.
    Closed,
}

impl std::fmt::Display for NotDurable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotDurable::TimedOut => "not durable within the acknowledgement timeout",
            NotDurable::Failed => "writing to disk failed",
            NotDurable::Closed => "ingest stopped before the data was durable",
        })
    }
}

#[derive(Default)]
struct State {
    /// Highest position made durable (0: none yet; positions start at 1).
    durable: u64,
    /// Recent ranges `[from, to]` that failed, oldest first.
    failed: VecDeque<(u64, u64)>,
    closed: bool,
}

impl State {
    fn outcome(&self, pos: u64) -> Option<Result<(), NotDurable>> {
        if self.failed.iter().any(|&(a, b)| a <= pos && pos <= b) {
            Some(Err(NotDurable::Failed))
        } else if pos <= self.durable {
            Some(Ok(()))
        } else if self.closed {
            Some(Err(NotDurable::Closed))
        } else {
            None
        }
    }
}

/// The durable position shared by one writer and its waiters.
pub struct DurableMark {
    state: Mutex<State>,
    changed: Condvar,
    /// Bumped on every change, to wake async waiters.
    version: tokio::sync::watch::Sender<u64>,
}

impl Default for DurableMark {
    fn default() -> Self {
        DurableMark {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            version: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl DurableMark {
    /// A mark at position 0 (nothing durable yet).
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A waiter that panicked holding the lock left a consistent state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn changed(&self) {
        self.changed.notify_all();
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// The highest durable position.
    pub fn durable(&self) -> u64 {
        self.lock().durable
    }

    /// Every position up to `to` is durable now (a lower `to` changes nothing).
    pub fn advance(&self, to: u64) {
        let mut s = self.lock();
        if to <= s.durable {
            return;
        }
        s.durable = to;
        drop(s);
        self.changed();
    }

    /// Positions `from..=to` could not be made durable: their waiters fail
    /// (a later [`advance`](Self::advance) past them does not make them durable).
    pub fn fail(&self, from: u64, to: u64) {
        let mut s = self.lock();
        if s.failed.len() == FAILED_KEPT {
            s.failed.pop_front();
        }
        s.failed.push_back((from, to));
        s.durable = s.durable.max(to);
        drop(s);
        self.changed();
    }

    /// The writer stopped: positions not durable now never will be.
    pub fn close(&self) {
        self.lock().closed = true;
        self.changed();
    }

    /// Whether `pos` is settled: `Some(Ok)` durable, `Some(Err)` never
    /// will be, `None` not yet.
    pub fn check(&self, pos: u64) -> Option<Result<(), NotDurable>> {
        self.lock().outcome(pos)
    }

    /// Waits (async) until `pos` is durable, at most `timeout`.
    pub async fn wait(&self, pos: u64, timeout: Duration) -> Result<(), NotDurable> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = self.version.subscribe();
        loop {
            // Marked seen before the check, so a change after it wakes us.
            rx.borrow_and_update();
            if let Some(r) = self.check(pos) {
                return r;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                // The sender lives in `self`, so it cannot be gone: re-check.
                Ok(Err(_)) => return self.check(pos).unwrap_or(Err(NotDurable::Closed)),
                Err(_) => return self.check(pos).unwrap_or(Err(NotDurable::TimedOut)),
            }
        }
    }

    /// Blocks the calling thread until `pos` is durable, at most `timeout`.
    pub fn wait_blocking(&self, pos: u64, timeout: Duration) -> Result<(), NotDurable> {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        loop {
            if let Some(r) = s.outcome(pos) {
                return r;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NotDurable::TimedOut);
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn blocking_waiters_see_advance_fail_and_close() {
        let m = Arc::new(DurableMark::new());
        assert_eq!(m.check(1), None);
        assert_eq!(
            m.wait_blocking(1, Duration::from_millis(10)),
            Err(NotDurable::TimedOut)
        );
        let w = {
            let m = m.clone();
            std::thread::spawn(move || m.wait_blocking(3, Duration::from_secs(10)))
        };
        m.advance(2);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!w.is_finished(), "position 3 is not durable at 2");
        m.advance(3);
        assert_eq!(w.join().unwrap(), Ok(()));
        m.advance(1);
        assert_eq!(m.durable(), 3, "the mark never goes back");
        m.fail(4, 5);
        m.advance(6);
        assert_eq!(m.check(4), Some(Err(NotDurable::Failed)));
        assert_eq!(m.check(5), Some(Err(NotDurable::Failed)));
        assert_eq!(m.check(6), Some(Ok(())));
        assert_eq!(m.check(7), None);
        m.close();
        assert_eq!(m.check(7), Some(Err(NotDurable::Closed)));
        assert_eq!(m.check(6), Some(Ok(())));
    }

    #[test]
    fn async_waiters_wake_on_advance() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let m = Arc::new(DurableMark::new());
        let waiter = {
            let m = m.clone();
            std::thread::spawn(move || rt.block_on(m.wait(2, Duration::from_secs(10))))
        };
        std::thread::sleep(Duration::from_millis(20));
        m.advance(1);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished());
        m.advance(2);
        assert_eq!(waiter.join().unwrap(), Ok(()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        assert_eq!(
            rt.block_on(m.wait(9, Duration::from_millis(10))),
            Err(NotDurable::TimedOut)
        );
    }
}
