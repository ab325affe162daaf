//! Acknowledged TCP senders on the ingest side: when a sender's frames
//! are durable.
//!
//! A frame of an acknowledged sender is settled once every record of it
//! left the reorder stage (pushed into the engine, or refused and counted
//! as late or not stored); a persist that starts after that makes it
//! durable. So the marks are taken before each persist and handed to the
//! [`AckBook`] (which writes them beside the store and lets the receiving
//! threads send ACK frames) once the persist succeeded.
//!
//! The reorder stage releases records in time order: after a release up to
//! time `u`, every record it still holds is later than `u`. A frame is
//! settled when the latest time of its records that went into the stage is
//! at most `u`, or when the stage holds nothing.

use std::collections::VecDeque;
use std::sync::Arc;

use endpoint::AckBook;
use rustc_hash::FxHashMap;

/// Per acknowledged sender: frames not settled yet, and the marks.
pub struct AckTracker {
    book: Arc<AckBook>,
    /// Per sender, `(last sequence number of a group, latest time of its
    /// records held in the reorder stage, 0: none)`, oldest first.
    pending: FxHashMap<u64, VecDeque<(u64, u64)>>,
    /// Per sender, the highest sequence number settled.
    settled: FxHashMap<u64, u64>,
    /// Per sender, the highest sequence number the book was told is durable.
    durable: FxHashMap<u64, u64>,
}

impl AckTracker {
    /// A tracker that reports to `book`.
    pub fn new(book: Arc<AckBook>) -> Self {
        AckTracker {
            book,
            pending: FxHashMap::default(),
            settled: FxHashMap::default(),
            durable: FxHashMap::default(),
        }
    }

    /// A group of `sender`'s frames up to `seq` was taken; `held_max` is
    /// the latest time of its records the reorder stage holds (0: none).
    pub fn add(&mut self, sender: u64, seq: u64, held_max: u64) {
        self.pending
            .entry(sender)
            .or_default()
            .push_back((seq, held_max));
    }

    /// Settles the groups whose held records were released: the stage
    /// released everything up to `released`, or holds nothing (`None`).
    pub fn settle(&mut self, released: Option<u64>) {
        if self.pending.is_empty() {
            return;
        }
        for (sender, q) in self.pending.iter_mut() {
            let mut last = None;
            while let Some(&(seq, held_max)) = q.front() {
                if held_max != 0 && released.is_some_and(|u| held_max > u) {
                    break;
                }
                last = Some(seq);
                q.pop_front();
            }
            if let Some(seq) = last {
                let s = self.settled.entry(*sender).or_default();
                *s = (*s).max(seq);
            }
        }
        self.pending.retain(|_, q| !q.is_empty());
    }

    /// Whether some settled frames are not durable yet (a persist is due).
    pub fn due(&self) -> bool {
        self.settled
            .iter()
            .any(|(s, &seq)| self.durable.get(s).is_none_or(|&d| seq > d))
    }

    /// The marks a persist starting now makes durable.
    pub fn marks(&self) -> Vec<(u64, u64)> {
        self.settled
            .iter()
            .filter(|(s, &seq)| self.durable.get(*s).is_none_or(|&d| seq > d))
            .map(|(&s, &seq)| (s, seq))
            .collect()
    }

    /// The persist that started after [`Self::marks`] succeeded.
    pub fn persisted(&mut self, marks: Vec<(u64, u64)>) {
        if marks.is_empty() {
            return;
        }
        match self.book.advance(&marks) {
            Ok(()) => {
                for (s, seq) in marks {
                    self.durable.insert(s, seq);
                }
            }
            // The data is durable; only the acknowledgement waits (the
            // next persist tries again). The sender keeps its frames.
            Err(e) => log::error!("acknowledgements not recorded: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_settle_in_order_once_their_held_records_are_released() {
        let book = Arc::new(AckBook::in_memory());
        let mut t = AckTracker::new(book.clone());
        t.add(1, 3, 100);
        t.add(1, 5, 0);
        t.add(2, 9, 50);
        t.settle(Some(60));
        assert_eq!(t.marks(), vec![(2, 9)]);
        t.settle(Some(100));
        let mut m = t.marks();
        m.sort_unstable();
        assert_eq!(m, vec![(1, 5), (2, 9)]);
        assert!(t.due());
        t.persisted(m);
        assert!(!t.due());
        assert_eq!(book.durable(1), 5);
        t.add(1, 6, 200);
        t.settle(None);
        assert_eq!(t.marks(), vec![(1, 6)]);
    }
}
