//! When a durable OTLP request can be answered without waiting for the
//! ingest thread's answer: the handler then waits only for its raw log
//! entry to be durable (one thread wake-up fewer per request).
//!
//! The ingest thread refuses a request's record (after the series limit,
//! which the handler's conversion applies) only when its series cannot be
//! declared, or when the record is older than its series' newest stored
//! record and than each of its late siblings' newest, all
//! [`loom::MAX_LATE_GENERATIONS`] of which exist. The handler answers by
//! itself only when that is impossible:
//!
//! - every series of the request is declared already (the ingest thread
//!   adds a series here only after publishing its sibling count), and
//! - `most + ahead < MAX_LATE_GENERATIONS`, where `most` is the largest
//!   late-sibling count of any declared OTLP series, published after the
//!   ingest thread took `processed` requests, and `ahead` = requests handed
//!   to the queue (read after this one was handed) − `processed`. Taking
//!   one request creates at most one sibling per series: its late records
//!   are released at once, in time order with whatever else the window
//!   releases, so the first that fits no sibling starts one every later
//!   one fits. So when this request is taken no series has all its
//!   siblings, and none of its records is refused.
//!
//! Without a reorder window records are pushed in request order (one
//! request can start several siblings), so the rule is off: `most` is
//! published as the bound. Refused sends are uncounted (the bound only
//! ever errs towards waiting).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use loom::MAX_LATE_GENERATIONS;
use otlp::Shaped;

/// Bits of [`Admission::state`] holding the requests taken.
const PROCESSED_BITS: u32 = 56;
const PROCESSED_MASK: u64 = (1 << PROCESSED_BITS) - 1;

/// What the ingest thread publishes for the handlers' own admission.
#[derive(Debug, Default)]
pub struct Admission {
    /// OTLP requests the ingest thread has taken (low bits) and the most
    /// late siblings any declared OTLP series has (high 8 bits), stored
    /// together so a handler reads a consistent pair.
    state: AtomicU64,
    /// OTLP requests handed to the ingest queue (counted before the send,
    /// uncounted when the send fails).
    sent: AtomicU64,
    /// Series declared and counted in `state`.
    declared: RwLock<HashSet<u64>>,
}

impl Admission {
    /// Whether every series of `records` is declared (checked before the
    /// request is handed over: the set only grows).
    pub fn all_declared(&self, records: &[Shaped]) -> bool {
        let Ok(set) = self.declared.read() else {
            return false;
        };
        let mut last = None;
        records.iter().all(|r| {
            if last == Some(r.source) {
                return true;
            }
            last = Some(r.source);
            set.contains(&r.source)
        })
    }

    /// A request is about to be handed to the ingest queue.
    pub fn sending(&self) {
        self.sent.fetch_add(1, Ordering::SeqCst);
    }

    /// The request announced by [`Admission::sending`] was not handed over.
    pub fn not_sent(&self) {
        self.sent.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether no record of a request handed over already (its series all
    /// declared) can be refused as late when the ingest thread takes it.
    pub fn never_late(&self) -> bool {
        let s = self.state.load(Ordering::SeqCst);
        let sent = self.sent.load(Ordering::SeqCst);
        let (processed, most) = (s & PROCESSED_MASK, s >> PROCESSED_BITS);
        most + sent.saturating_sub(processed) < u64::from(MAX_LATE_GENERATIONS)
    }

    /// The ingest thread has taken `processed` requests; `most` is the
    /// largest late-sibling count of any declared series (the bound when
    /// the rule is off); `new` are series declared and counted in `most`.
    pub fn publish(&self, processed: u64, most: u32, new: &[u64]) {
        let most = u64::from(most.min(255));
        self.state.store(
            (processed & PROCESSED_MASK) | (most << PROCESSED_BITS),
            Ordering::SeqCst,
        );
        // After the state: a handler that sees a series declared reads a
        // state that counts its siblings.
        if !new.is_empty() {
            if let Ok(mut set) = self.declared.write() {
                set.extend(new.iter().copied());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(source: u64) -> Shaped {
        Shaped {
            source,
            time_us: 1,
            bytes: vec![],
        }
    }

    /// The rule against a brute-force count: a request may be answered
    /// alone only when even one new sibling per request ahead of it cannot
    /// give any series all its siblings.
    #[test]
    fn answers_alone_only_when_no_record_can_be_refused() {
        let a = Admission::default();
        assert!(!a.all_declared(&[rec(1)]), "unknown series waits");
        a.publish(0, 0, &[1, 2]);
        assert!(a.all_declared(&[rec(1), rec(1), rec(2)]));
        assert!(!a.all_declared(&[rec(1), rec(3)]));
        for most in 0..=MAX_LATE_GENERATIONS + 1 {
            for ahead in 0..10u64 {
                let a = Admission::default();
                a.publish(5, most, &[]);
                for _ in 0..5 + ahead {
                    a.sending();
                }
                let brute = (0..=ahead).all(|created| most as u64 + created < 8);
                assert_eq!(a.never_late(), brute, "most {most} ahead {ahead}");
            }
        }
        // A refused send is uncounted.
        let a = Admission::default();
        for _ in 0..8 {
            a.sending();
        }
        assert!(!a.never_late());
        for _ in 0..7 {
            a.not_sent();
        }
        assert!(a.never_late());
    }
}
