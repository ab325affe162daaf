//! Summarising a sealed chunk: its records' indexed values, per bin.
//!
//! This is the indexer's per-record loop, so it has two ways. A narrow
//! index (bins of at most [`FINE_MAX_INTERVAL`] values, whose summaries
//! keep per-value counts anyway) counts each value in one array and builds
//! the bins' summaries from those counts once per chunk: per record a
//! subtraction, a comparison and an increment. Every other index
//! accumulates count, sum, extremes per bin, record by record.
//!
//! [`FINE_MAX_INTERVAL`]: crate::bin_summary::FINE_MAX_INTERVAL

use crate::bin_summary::{BinSummary, FineLayout};
use crate::index::state::{IndexState, ValueOf};
use crate::log::record::for_each_bytes;
use crate::schema::read_raw;

/// Largest regular range (`n_bins · interval` values) counted value by
/// value: 4 MiB of counts. A wider narrow index (over 65,536 bins of 16)
/// takes the per-bin way.
const BY_VALUE_MAX: u64 = 1 << 20;

/// Scratch space for summarising chunks. Every count and accumulator is
/// back to empty after each chunk, so one scratch space serves chunks of
/// every index (it grows to the largest index it has met); emitting and
/// resetting cost per non-empty bin, not per declared bin (sources may
/// declare thousands).
pub(crate) struct Summariser {
    /// Per-bin accumulators (the per-bin way).
    acc: Vec<BinSummary>,
    /// The bins a chunk touched (both ways; regular bins only by value).
    touched: Vec<u32>,
    /// Records per value of the regular range (the by-value way).
    per_value: Vec<u32>,
    /// One bit per regular bin touched (the by-value way).
    seen: Vec<u64>,
}

impl Summariser {
    pub(crate) fn new() -> Self {
        Summariser {
            acc: Vec::new(),
            touched: Vec::new(),
            per_value: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Summaries (bin order) of the `count` records encoded in `payload`.
    pub(crate) fn summarise(
        &mut self,
        state: &IndexState,
        payload: &[u8],
        count: u32,
        out: &mut Vec<BinSummary>,
    ) -> Result<(), String> {
        // The field's width is fixed per index: passed here as a constant,
        // `read_raw`'s match on it folds away instead of being an indirect
        // jump per record in the hot loop.
        let chunk = (payload, count);
        match state.value_of {
            ValueOf::Field { offset, width: 8 } => {
                self.summarise_with(state, chunk, out, |b| read_raw(b, offset, 8).unwrap_or(0))
            }
            ValueOf::Field { offset, width: 4 } => {
                self.summarise_with(state, chunk, out, |b| read_raw(b, offset, 4).unwrap_or(0))
            }
            ValueOf::Field { offset, width: 2 } => {
                self.summarise_with(state, chunk, out, |b| read_raw(b, offset, 2).unwrap_or(0))
            }
            _ => self.summarise_with(state, chunk, out, |b| state.value(b)),
        }
    }

    /// [`Summariser::summarise`] with the index's value reader.
    fn summarise_with(
        &mut self,
        state: &IndexState,
        (payload, count): (&[u8], u32),
        out: &mut Vec<BinSummary>,
        value: impl Fn(&[u8]) -> u64,
    ) -> Result<(), String> {
        out.clear();
        let span = u64::from(state.n_bins).saturating_mul(state.interval);
        let r = match state.fine {
            Some(fine)
                if (1..=BY_VALUE_MAX).contains(&span) && state.min.checked_add(span).is_some() =>
            {
                self.by_value(state, fine, span as usize, payload, count, out, value)
            }
            _ => self.by_bin(state, payload, count, out, value),
        };
        r.map_err(str::to_string)
    }

    /// The per-bin way: each record updates its bin's accumulator.
    fn by_bin(
        &mut self,
        state: &IndexState,
        payload: &[u8],
        count: u32,
        out: &mut Vec<BinSummary>,
        value: impl Fn(&[u8]) -> u64,
    ) -> Result<(), &'static str> {
        if self.acc.len() < state.bins.total() {
            self.acc.resize(state.bins.total(), BinSummary::default());
        }
        let acc = &mut self.acc;
        let touched = &mut self.touched;
        touched.clear();
        let fine = state.fine;
        let r = for_each_bytes(payload, count, |b| {
            let v = value(b);
            let bin = state.bins.bin_of(v);
            if let Some(slot) = acc.get_mut(bin as usize) {
                if slot.count == 0 {
                    touched.push(bin);
                }
                slot.add(v);
                if let Some(f) = &fine {
                    f.add(&mut slot.fine, bin, v);
                }
            }
        });
        touched.sort_unstable();
        for &bin in touched.iter() {
            let sm = std::mem::take(&mut acc[bin as usize]);
            let mut sm = BinSummary { bin, ..sm };
            sm.fine = FineLayout::kept(&sm);
            out.push(sm);
        }
        r
    }

    /// The by-value way: values of the regular range (`span` values from
    /// `state.min`) are counted one by one, the two overflow bins
    /// accumulated as in the per-bin way (they keep no per-value counts).
    #[allow(clippy::too_many_arguments)] // the chunk, its index and the reader
    fn by_value(
        &mut self,
        state: &IndexState,
        fine: FineLayout,
        span: usize,
        payload: &[u8],
        count: u32,
        out: &mut Vec<BinSummary>,
        value: impl Fn(&[u8]) -> u64,
    ) -> Result<(), &'static str> {
        if self.per_value.len() < span {
            self.per_value.resize(span, 0);
        }
        let words = (state.n_bins as usize).div_ceil(64);
        if self.seen.len() < words {
            self.seen.resize(words, 0);
        }
        let (counts, seen, touched) = (&mut self.per_value, &mut self.seen, &mut self.touched);
        touched.clear();
        let (min, width) = (state.min, state.interval);
        let (mut below, mut above) = (BinSummary::default(), BinSummary::default());
        let r = for_each_bytes(payload, count, |b| {
            let v = value(b);
            let k = v.wrapping_sub(min);
            match counts.get_mut(k as usize) {
                Some(c) if k < span as u64 => {
                    if *c == 0 {
                        // A value first seen in this chunk: its bin may be too.
                        // `v` is in the regular range, so its bin is 1 or more.
                        let q = state.bins.bin_of(v) as usize - 1;
                        if let Some(w) = seen.get_mut(q / 64) {
                            if *w & (1 << (q % 64)) == 0 {
                                *w |= 1 << (q % 64);
                                touched.push(q as u32);
                            }
                        }
                    }
                    *c += 1;
                }
                _ if v < min => below.add(v),
                _ => above.add(v),
            }
        });
        touched.sort_unstable();
        if below.count > 0 {
            out.push(BinSummary { bin: 0, ..below });
        }
        for &q in touched.iter() {
            if let Some(w) = seen.get_mut(q as usize / 64) {
                *w &= !(1 << (q % 64));
            }
            let first = q as usize * width as usize;
            let Some(values) = counts.get_mut(first..first + width as usize) else {
                continue;
            };
            let lo = min + first as u64;
            let mut sm = BinSummary {
                bin: q + 1,
                ..BinSummary::default()
            };
            for (off, c) in values.iter_mut().enumerate() {
                if *c == 0 {
                    continue;
                }
                let v = lo + off as u64;
                sm.count += *c;
                sm.sum += u128::from(v) * u128::from(*c);
                sm.min = sm.min.min(v);
                sm.max = v;
                sm.fine += fine.slot(off as u64, *c);
                *c = 0;
            }
            sm.fine = FineLayout::kept(&sm);
            out.push(sm);
        }
        if above.count > 0 {
            out.push(BinSummary {
                bin: state.n_bins + 1,
                ..above
            });
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::bins::Bins;
    use crate::log::record::encode;
    use proptest::prelude::*;

    /// An index on the little-endian u64 at offset 0 of each record.
    fn index(min: u64, interval: u64, n_bins: u32) -> IndexState {
        IndexState {
            value_of: ValueOf::Field {
                offset: 0,
                width: 8,
            },
            bins: Bins::new(min, interval, n_bins),
            min,
            interval,
            n_bins,
            fine: FineLayout::new(min, interval, n_bins),
        }
    }

    /// A chunk payload of one 12-byte record per value.
    fn payload(values: &[u64]) -> Vec<u8> {
        let mut p = vec![0u8; values.len() * 32];
        let mut pos = 0;
        for (i, v) in values.iter().enumerate() {
            let mut rec = [0u8; 12];
            rec[..8].copy_from_slice(&v.to_le_bytes());
            rec[8..].copy_from_slice(&(i as u32).to_le_bytes());
            pos += encode(&mut p[pos..], i as u64 % 3, &rec);
        }
        p.truncate(pos);
        p
    }

    /// What the bins must hold, from the values alone.
    fn brute(state: &IndexState, values: &[u64]) -> Vec<BinSummary> {
        let mut bins = std::collections::BTreeMap::<u32, Vec<u64>>::new();
        for &v in values {
            bins.entry(state.bins.bin_of(v)).or_default().push(v);
        }
        bins.into_iter()
            .map(|(bin, vs)| {
                let mut sm = BinSummary {
                    bin,
                    ..BinSummary::default()
                };
                for &v in &vs {
                    sm.add(v);
                    if let Some(f) = &state.fine {
                        f.add(&mut sm.fine, bin, v);
                    }
                }
                sm.fine = FineLayout::kept(&sm);
                sm
            })
            .collect()
    }

    proptest! {
        /// Both ways give the summaries computed value by value, for
        /// values below, inside and above the regular range, repeated ones
        /// (a slot saturates at 63 for 10-value bins) and one scratch
        /// space reused across indexes of every shape.
        #[test]
        fn both_ways_match_brute_force(
            min in prop_oneof![Just(0u64), 0u64..1_000, Just(u64::MAX - 100)],
            interval in prop_oneof![1u64..=16, 17u64..40],
            n_bins in 1u32..300,
            picks in proptest::collection::vec((0u8..8, any::<u64>()), 1..400),
            repeat in 1usize..80,
        ) {
            let state = index(min, interval, n_bins);
            let span = interval * u64::from(n_bins);
            let values: Vec<u64> = picks
                .iter()
                .flat_map(|&(kind, r)| {
                    let v = match kind {
                        0 => r,
                        1 => min.wrapping_sub(1 + r % 5),
                        2 => min.saturating_add(span).saturating_add(r % 5),
                        3 => min.saturating_add(span.saturating_sub(1)),
                        _ => min.saturating_add(r % span.max(1)),
                    };
                    std::iter::repeat_n(v, if kind == 4 { repeat } else { 1 })
                })
                .collect();
            let p = payload(&values);
            let mut s = Summariser::new();
            let mut out = Vec::new();
            // A wider index first: the scratch space is reused, not fresh.
            let wide = index(0, 16, 600);
            s.summarise(&wide, &payload(&[5, 9_000, 70]), 3, &mut out).unwrap();
            s.summarise(&state, &p, values.len() as u32, &mut out).unwrap();
            prop_assert_eq!(&out, &brute(&state, &values));
            let mut by_bin = Vec::new();
            s.by_bin(&state, &p, values.len() as u32, &mut by_bin, |b| state.value(b))
                .unwrap();
            prop_assert_eq!(&out, &by_bin);
        }
    }

    /// A truncated payload is an error, and the scratch space is clean
    /// for the next chunk.
    #[test]
    fn a_truncated_payload_errs_and_leaves_nothing_behind() {
        let state = index(0, 10, 100);
        let p = payload(&[3, 4, 55]);
        let mut s = Summariser::new();
        let mut out = Vec::new();
        assert!(s.summarise(&state, &p[..p.len() - 5], 3, &mut out).is_err());
        s.summarise(&state, &p, 3, &mut out).unwrap();
        assert_eq!(out, brute(&state, &[3, 4, 55]));
    }

    /// Timing only: `cargo test --release -p loom --lib summarise_speed --
    /// --ignored --nocapture` (24-byte records, latencies spread as P2's
    /// syscalls: p50 2 µs, p90 109 µs, p99 10 ms).
    #[test]
    #[ignore = "timing"]
    fn summarise_speed() {
        let mut state = index(0, 10, 10_000);
        state.value_of = ValueOf::Field {
            offset: 16,
            width: 8,
        };
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut chunks = Vec::new();
        for _ in 0..64 {
            let mut p = vec![0u8; 65_000];
            let (mut pos, mut count) = (0usize, 0u32);
            while pos + 40 < p.len() {
                let r = rnd();
                let dur = match r % 100 {
                    0..=49 => 1 + (r >> 8) % 2,
                    50..=89 => 2 + (r >> 8) % 107,
                    90..=98 => 109 + (r >> 8) % 10000,
                    _ => 10000 + (r >> 8) % 80000,
                };
                let mut rec = [0u8; 24];
                rec[..4].copy_from_slice(&((r >> 20) as u32 % 8).to_le_bytes());
                rec[8..16].copy_from_slice(&(r >> 3).to_le_bytes());
                rec[16..].copy_from_slice(&dur.to_le_bytes());
                pos += encode(&mut p[pos..], 1 + (r >> 40) % 3, &rec);
                count += 1;
            }
            p.truncate(pos);
            chunks.push((p, count));
        }
        let mut s = Summariser::new();
        let mut out = Vec::new();
        let records: u64 = chunks.iter().map(|c| u64::from(c.1)).sum();
        for round in 0..4 {
            for way in ["by value", "by bin"] {
                let t = std::time::Instant::now();
                for _ in 0..20 {
                    for (p, n) in &chunks {
                        if way == "by bin" {
                            s.by_bin(&state, p, *n, &mut out, |b| state.value(b))
                                .unwrap();
                        } else {
                            s.summarise(&state, p, *n, &mut out).unwrap();
                        }
                    }
                }
                let ns = t.elapsed().as_nanos() as f64 / (records * 20) as f64;
                eprintln!("round {round} {way}: {ns:.2} ns/record");
            }
        }
    }
}
