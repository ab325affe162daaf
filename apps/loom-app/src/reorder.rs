//! The reorder stage of event-time ingest: holds each source's records for
//! a bounded window and releases them in time order.
//!
//! A live workload sends one batch per worker thread; batches of different
//! threads interleave, so a source's records arrive out of order by up to a
//! batch's span. The engine needs each source in time order, so without
//! this stage such records would all be late. Each source's
//! records are kept as sorted runs: a record joins the run whose newest
//! time is the latest not after its own (patience sorting), so the number
//! of runs stays at the stream's degree of disorder (about one per sending
//! thread) however long the window, and in-order streams stay one run. A
//! record is released once the newest event time seen by any source is
//! more than the window past it; runs are merged through a heap. A record
//! older than its source's newest stored record arrives after its time was
//! released: it is late, and the caller stores it at its own time in a late
//! sibling of its source (`source_state`; a record's time is never moved).
//!
//! Generic over the record type: the TCP stream's telemetry records (held
//! in wire form) and OTLP's shaped records (whose times are always their
//! own) each have a stage.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;
use telemetry::Kind;

/// A record the stage can hold: it names its source.
pub trait Keyed {
    /// What tells the record's source apart, cheap to hash.
    type Key: std::hash::Hash + Eq + Copy;
    /// The record's source key.
    fn key(&self) -> Self::Key;
}

/// A telemetry record held in wire form: its kind's fixed-size encoding
/// and the ingest slot of its source (resolved when it arrived).
#[derive(Clone, Copy)]
pub struct WireRecord {
    slot: u32,
    len: u8,
    bytes: [u8; WireRecord::MAX_LEN],
}

impl WireRecord {
    /// The longest encoding of any kind.
    const MAX_LEN: usize = 48;

    /// `body`, an encoded record of `kind`, bound for the source in `slot`.
    pub fn new(slot: usize, kind: Kind, body: &[u8]) -> WireRecord {
        let len = kind.encoded_len().min(body.len()).min(Self::MAX_LEN);
        let mut bytes = [0u8; Self::MAX_LEN];
        bytes[..len].copy_from_slice(&body[..len]);
        WireRecord {
            slot: slot as u32,
            len: len as u8,
            bytes,
        }
    }

    /// The ingest slot of the record's source.
    pub fn slot(&self) -> usize {
        self.slot as usize
    }

    /// The record's encoded bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl Keyed for WireRecord {
    type Key = u32;
    fn key(&self) -> u32 {
        self.slot
    }
}

/// A record and the time it will be stored at.
pub type Timed<T> = (u64, T);

/// Emptied runs kept per source for reuse (their allocations).
const SPARE_RUNS: usize = 4;

struct SourceRuns<T> {
    runs: Vec<VecDeque<Timed<T>>>,
    /// The run the last record joined: the next one usually joins it too.
    hint: usize,
    spare: Vec<VecDeque<Timed<T>>>,
}

impl<T> Default for SourceRuns<T> {
    fn default() -> Self {
        SourceRuns {
            runs: Vec::new(),
            hint: 0,
            spare: Vec::new(),
        }
    }
}

fn newest<T>(run: &VecDeque<Timed<T>>) -> u64 {
    run.back().map_or(0, |b| b.0)
}

impl<T> SourceRuns<T> {
    fn add(&mut self, ts: u64, r: T) {
        let fits = |run: &VecDeque<Timed<T>>| run.back().is_none_or(|b| b.0 <= ts);
        let at = match self.runs.get(self.hint) {
            Some(run) if fits(run) => Some(self.hint),
            _ => self
                .runs
                .iter()
                .enumerate()
                .filter(|(_, run)| fits(run))
                .max_by_key(|(_, run)| newest(run))
                .map(|(i, _)| i),
        };
        let at = at.unwrap_or_else(|| {
            self.runs.push(self.spare.pop().unwrap_or_default());
            self.runs.len() - 1
        });
        self.runs[at].push_back((ts, r));
        self.hint = at;
    }

    /// Appends to `out`, in time order, every record with time ≤ `upto`.
    fn release(&mut self, upto: u64, out: &mut Vec<Timed<T>>) {
        if let [run] = self.runs.as_mut_slice() {
            let n = run.partition_point(|x| x.0 <= upto);
            out.extend(run.drain(..n));
        } else {
            let mut heads: BinaryHeap<Reverse<(u64, usize)>> = self
                .runs
                .iter()
                .enumerate()
                .filter_map(|(i, run)| run.front().map(|f| Reverse((f.0, i))))
                .filter(|Reverse((t, _))| *t <= upto)
                .collect();
            while let Some(Reverse((_, i))) = heads.pop() {
                let run = &mut self.runs[i];
                if let Some(x) = run.pop_front() {
                    out.push(x);
                }
                if let Some(f) = run.front().filter(|f| f.0 <= upto) {
                    heads.push(Reverse((f.0, i)));
                }
            }
        }
        if self.runs.iter().any(|r| r.is_empty()) {
            let mut kept = Vec::with_capacity(self.runs.len());
            for run in self.runs.drain(..) {
                if !run.is_empty() {
                    kept.push(run);
                } else if self.spare.len() < SPARE_RUNS {
                    self.spare.push(run);
                }
            }
            self.runs = kept;
            self.hint = self.runs.len().saturating_sub(1);
        }
    }
}

/// Per-source reorder buffers with one window.
pub struct Reorder<T: Keyed> {
    window_us: u64,
    newest: u64,
    sources: FxHashMap<T::Key, SourceRuns<T>>,
    held: usize,
    /// The time up to which the last release released everything.
    released: u64,
}

impl<T: Keyed> Reorder<T> {
    /// A stage that holds records for `window_us` of event time.
    pub fn new(window_us: u64) -> Self {
        Reorder {
            window_us,
            newest: 0,
            sources: FxHashMap::default(),
            held: 0,
            released: 0,
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
        self.released = self.released.max(upto);
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

    /// Every record held is later than this (`None`: none is held).
    pub fn released_through(&self) -> Option<u64> {
        (self.held > 0).then_some(self.released)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of source `0` or `1` with its time as payload.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Rec(u8, u64);

    impl Keyed for Rec {
        type Key = u8;
        fn key(&self) -> u8 {
            self.0
        }
    }

    /// `threads` senders each send batches of 10 records per source
    /// spanning 20 µs; thread k runs k·15 µs behind thread 0.
    fn interleaved(threads: u64, batches: u64) -> Vec<Vec<Rec>> {
        (0..batches)
            .map(|b| {
                let mut batch = Vec::new();
                for thread in (0..threads).rev() {
                    for k in 0..10u64 {
                        for src in [0u8, 1] {
                            let ts = (b * 20 + k * 2 + u64::from(src)).saturating_sub(thread * 15);
                            batch.push(Rec(src, ts));
                        }
                    }
                }
                batch
            })
            .collect()
    }

    #[test]
    fn interleaved_batches_come_out_in_order_within_the_window() {
        let mut st = Reorder::new(100);
        let mut out = Vec::new();
        let mut sent = Vec::new();
        for batch in interleaved(4, 60) {
            for r in batch {
                st.add(r.1, r);
                sent.push(r);
            }
            st.release(&mut out);
        }
        st.flush(&mut out);
        assert_eq!(st.held(), 0);
        assert_eq!(out.len(), sent.len());
        for src in [0u8, 1] {
            let got: Vec<u64> = out.iter().filter(|x| x.1 .0 == src).map(|x| x.0).collect();
            let mut want: Vec<u64> = sent.iter().filter(|r| r.0 == src).map(|r| r.1).collect();
            want.sort_unstable();
            assert_eq!(got, want, "source {src} released out of order or lost");
            assert!(
                out.iter().all(|(ts, r)| *ts == r.1),
                "a record's time changed"
            );
        }
    }

    /// However long the window, a source holds about one run per
    /// interleaved sender, not one per out-of-order batch.
    #[test]
    fn runs_stay_at_the_degree_of_disorder() {
        let mut st = Reorder::new(1_000_000);
        for batch in interleaved(8, 500) {
            for r in batch {
                st.add(r.1, r);
            }
        }
        for src in [0u8, 1] {
            let runs = st.sources[&src].runs.len();
            assert!(runs <= 8, "source {src} holds {runs} runs for 8 senders");
        }
        let mut out = Vec::new();
        st.flush(&mut out);
        for src in [0u8, 1] {
            let got: Vec<u64> = out.iter().filter(|x| x.1 .0 == src).map(|x| x.0).collect();
            assert!(
                got.windows(2).all(|w| w[0] <= w[1]),
                "source {src} out of order"
            );
            assert_eq!(got.len(), 8 * 500 * 10);
        }
    }

    #[test]
    fn nothing_is_released_before_the_window_passes() {
        let mut st = Reorder::new(1_000);
        let mut out = Vec::new();
        st.add(5_000, Rec(0, 5_000));
        st.add(5_500, Rec(0, 5_500));
        st.release(&mut out);
        assert!(out.is_empty());
        st.add(6_200, Rec(0, 6_200));
        st.release(&mut out);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![5_000]);
        assert_eq!(st.held(), 2);
    }

    #[test]
    fn wire_records_keep_their_bytes_and_slot() {
        let body: Vec<u8> = (0..Kind::Packet.encoded_len() as u8).collect();
        let w = WireRecord::new(7, Kind::Packet, &body);
        assert_eq!(w.bytes(), &body[..]);
        assert_eq!(w.slot(), 7);
        let short = WireRecord::new(2, Kind::KvOp, &body);
        assert_eq!(short.bytes(), &body[..Kind::KvOp.encoded_len()]);
    }
}
