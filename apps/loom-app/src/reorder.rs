//! The reorder stage of event-time ingest: holds each source's records for
//! a bounded window and releases them in time order.
//!
//! A live workload sends one batch per worker thread; batches of different
//! threads interleave, so a source's records arrive out of order by up to a
//! batch's span. The engine needs each source in time order, so without
//! this stage such records would be stored at a raised time. Records are
//! kept as sorted runs (a batch's records of one source are usually already
//! in order, so in-order streams stay one run and cost a copy); a record is
//! released once the newest event time seen by any source is more than the
//! window past it. A record that arrives after its time was released is
//! late: the caller stores it at the source's newest time and counts it.
//!
//! Generic over the record type: the TCP stream's telemetry records and
//! OTLP's shaped records (whose times are always their own) each have a
//! stage.

use std::collections::{HashMap, VecDeque};

use telemetry::raw::SourceKey;
use telemetry::Record;

/// A record the stage can hold: it names its source.
pub trait Keyed {
    /// What tells the record's source apart, cheap to hash.
    type Key: std::hash::Hash + Eq + Copy;
    /// The record's source key.
    fn key(&self) -> Self::Key;
}

impl Keyed for Record {
    type Key = SourceKey;
    fn key(&self) -> SourceKey {
        SourceKey::of_record(self)
    }
}

impl Keyed for otlp::Shaped {
    type Key = u64;
    fn key(&self) -> u64 {
        self.source
    }
}

/// A record and the time it will be stored at.
pub type Timed<T = Record> = (u64, T);

struct SourceRuns<T> {
    runs: Vec<VecDeque<Timed<T>>>,
}

impl<T> Default for SourceRuns<T> {
    fn default() -> Self {
        SourceRuns { runs: Vec::new() }
    }
}

impl<T> SourceRuns<T> {
    fn add(&mut self, ts: u64, r: T) {
        match self.runs.last_mut() {
            Some(run) if run.back().is_none_or(|b| b.0 <= ts) => run.push_back((ts, r)),
            _ => self.runs.push(VecDeque::from([(ts, r)])),
        }
    }

    /// Appends to `out`, in time order, every record with time ≤ `upto`.
    fn release(&mut self, upto: u64, out: &mut Vec<Timed<T>>) {
        if self.runs.len() == 1 {
            let run = &mut self.runs[0];
            while run.front().is_some_and(|f| f.0 <= upto) {
                if let Some(x) = run.pop_front() {
                    out.push(x);
                }
            }
        } else {
            loop {
                let next = self
                    .runs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| r.front().map(|f| (f.0, i)))
                    .min();
                match next {
                    Some((t, i)) if t <= upto => {
                        if let Some(x) = self.runs[i].pop_front() {
                            out.push(x);
                        }
                    }
                    _ => break,
                }
            }
        }
        self.runs.retain(|r| !r.is_empty());
    }
}

/// Per-source reorder buffers with one window.
pub struct Reorder<T: Keyed = Record> {
    window_us: u64,
    newest: u64,
    sources: HashMap<T::Key, SourceRuns<T>>,
    held: usize,
}

impl<T: Keyed> Reorder<T> {
    /// A stage that holds records for `window_us` of event time.
    pub fn new(window_us: u64) -> Self {
        Reorder {
            window_us,
            newest: 0,
            sources: HashMap::new(),
            held: 0,
        }
    }

    /// Takes one record to be stored at `ts`.
    pub fn add(&mut self, ts: u64, r: T) {
        self.newest = self.newest.max(ts);
        self.sources.entry(r.key()).or_default().add(ts, r);
        self.held += 1;
    }

    /// Appends to `out` every record that is more than the window older than
    /// the newest time seen, each source's in time order.
    pub fn release(&mut self, out: &mut Vec<Timed<T>>) {
        let upto = self.newest.saturating_sub(self.window_us);
        self.release_upto(upto, out);
    }

    /// Appends every held record to `out` (end of ingest).
    pub fn flush(&mut self, out: &mut Vec<Timed<T>>) {
        self.release_upto(u64::MAX, out);
    }

    fn release_upto(&mut self, upto: u64, out: &mut Vec<Timed<T>>) {
        let before = out.len();
        for s in self.sources.values_mut() {
            s.release(upto, out);
        }
        self.held -= out.len() - before;
    }

    /// Records held now.
    pub fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telemetry::{KvOp, KvOpKind};

    fn kv(ts: u64, op: KvOpKind) -> Record {
        Record::KvOp(KvOp {
            thread_id: 1,
            op,
            start_us: ts,
            duration_us: ts % 7,
        })
    }

    #[test]
    fn interleaved_batches_come_out_in_order_within_the_window() {
        let mut st = Reorder::new(100);
        let mut out = Vec::new();
        // Two "threads" whose batches overlap in time by up to 60 µs.
        let mut sent = Vec::new();
        for b in 0..50u64 {
            for thread in [1u64, 0] {
                for k in 0..10u64 {
                    let ts = b * 40 + thread * 20 + k * 2;
                    let op = if k % 3 == 0 {
                        KvOpKind::Write
                    } else {
                        KvOpKind::Read
                    };
                    st.add(ts, kv(ts, op));
                    sent.push((ts, kv(ts, op)));
                }
            }
            st.release(&mut out);
        }
        st.flush(&mut out);
        assert_eq!(st.held(), 0);
        assert_eq!(out.len(), sent.len());
        for op in [KvOpKind::Read, KvOpKind::Write] {
            let got: Vec<u64> = out
                .iter()
                .filter(|(_, r)| matches!(r, Record::KvOp(k) if k.op == op))
                .map(|x| x.0)
                .collect();
            let mut want: Vec<u64> = sent
                .iter()
                .filter(|(_, r)| matches!(r, Record::KvOp(k) if k.op == op))
                .map(|x| x.0)
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "{op:?} released out of order or lost");
        }
    }

    #[test]
    fn nothing_is_released_before_the_window_passes() {
        let mut st = Reorder::new(1_000);
        let mut out = Vec::new();
        st.add(5_000, kv(5_000, KvOpKind::Read));
        st.add(5_500, kv(5_500, KvOpKind::Read));
        st.release(&mut out);
        assert!(out.is_empty());
        st.add(6_200, kv(6_200, KvOpKind::Read));
        st.release(&mut out);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![5_000]);
        assert_eq!(st.held(), 2);
    }
}
