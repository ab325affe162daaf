//! The range index's record of one chunk's records in one value bin. The
//! indexer and recovery build them, segment index files persist them and
//! snapshots read them, so the type sits below both `index` and `storage`
//! (which uses it without depending on the indexer).

/// Summary of the records of one chunk that fall in one bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BinSummary {
    pub bin: u32,
    pub count: u32,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
    /// Per-value counts of a narrow bin ([`FineLayout`]), or 0 when not
    /// kept (a wide bin, an overflow bin, a count too large for its slot,
    /// or one `exact_values` answers anyway). It sits in what was padding
    /// (the `u128` aligns the struct to 16 bytes): still 48 bytes.
    pub fine: u64,
}

// Summaries are held by the hundred million: the per-value counts must
// not grow them.
const _: () = assert!(std::mem::size_of::<BinSummary>() == 48);

/// Widest bin (`interval`) whose summaries keep per-value counts.
pub(crate) const FINE_MAX_INTERVAL: u64 = 16;

/// A value outside its bin was counted (never, for a bin layout that
/// matches): the counts are unknown.
const FINE_FULL: u64 = u64::MAX;

/// How a narrow range index packs per-value counts into
/// [`BinSummary::fine`]: a regular bin holds `interval` values
/// (`lo..lo + interval`), and value `lo + k` has a slot of `bits` bits at
/// bit `k · bits`, `bits = 63 / interval` (6 for kv's 10 µs bins). A slot
/// that reaches its largest value (`2^bits − 1`, 63) stays there:
/// *saturated*, its count unknown but at least that. One or two saturated
/// slots are still exact: the bin's count and sum are two equations in
/// their two counts (`BinSummary::fine_counts`). The top bit is never
/// used, so [`FINE_FULL`] is no valid packing.
///
/// A percentile's rank bin is touched by nearly every chunk of a busy
/// window with a handful of records each, a few of its values often
/// (the hour of P3's reads: p99 at 10–11 µs, dozens of each per chunk);
/// with the counts the chunk's values in that bin are known exactly and
/// the chunk is not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FineLayout {
    min: u64,
    interval: u64,
    n_bins: u32,
    bits: u32,
}

impl FineLayout {
    /// The layout of a range index, `None` when its bins are wider than
    /// [`FINE_MAX_INTERVAL`].
    pub(crate) fn new(min: u64, interval: u64, n_bins: u32) -> Option<Self> {
        (1..=FINE_MAX_INTERVAL)
            .contains(&interval)
            .then(|| FineLayout {
                min,
                interval,
                n_bins,
                bits: 63 / interval as u32,
            })
    }

    /// The smallest value of regular bin `bin`, `None` for the overflow
    /// bins.
    #[inline(always)]
    pub(crate) fn bin_lo(&self, bin: u32) -> Option<u64> {
        if bin == 0 || bin > self.n_bins {
            return None;
        }
        Some(self.min + u64::from(bin - 1) * self.interval)
    }

    /// The packing of value `lo + off` of a bin counted `count` times: the
    /// same as `count` calls of [`FineLayout::add`] (a slot saturates).
    #[inline]
    pub(crate) fn slot(&self, off: u64, count: u32) -> u64 {
        let mask = (1u64 << self.bits) - 1;
        u64::from(count).min(mask) << (off as u32 * self.bits)
    }

    /// Counts value `v` (in bin `bin`) in `fine`.
    #[inline(always)]
    pub(crate) fn add(&self, fine: &mut u64, bin: u32, v: u64) {
        if *fine == FINE_FULL {
            return;
        }
        let off = match self.bin_lo(bin) {
            Some(lo) if v >= lo && v - lo < self.interval => v - lo,
            _ => {
                *fine = FINE_FULL;
                return;
            }
        };
        let shift = off as u32 * self.bits;
        let mask = (1u64 << self.bits) - 1;
        // A saturated slot stays saturated.
        if (*fine >> shift) & mask != mask {
            *fine += 1 << shift;
        }
    }

    /// What a finished summary keeps: its counts when they are known and
    /// needed (`exact_values` answers three values or fewer, and two
    /// neighbours, without them), else 0.
    pub(crate) fn kept(b: &BinSummary) -> u64 {
        if b.fine == FINE_FULL || b.count <= 3 || b.max - b.min <= 1 {
            0
        } else {
            b.fine
        }
    }
}

impl Default for BinSummary {
    fn default() -> Self {
        BinSummary {
            bin: 0,
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            fine: 0,
        }
    }
}

/// The summary of bin `bin` among a chunk's summaries `s` (in bin order,
/// each bin once). Bin `bin` can only sit at or before position
/// `bin − s[0].bin`, and a busy chunk's low bins are all present, so that
/// position is tried first: a p99's bin is usually found in one probe
/// (a binary search's cache misses were a sixth of a p99-per-bucket
/// panel's time).
pub(crate) fn find_bin(s: &[BinSummary], bin: u32) -> Option<BinSummary> {
    let first = s.first()?.bin;
    let last = usize::try_from(bin.checked_sub(first)?).ok()?;
    if let Some(b) = s.get(last).filter(|b| b.bin == bin) {
        return Some(*b);
    }
    let s = &s[..s.len().min(last)];
    s.binary_search_by_key(&bin, |b| b.bin).ok().map(|i| s[i])
}

impl BinSummary {
    /// The summary's values from its per-value counts (`fine`, packed by
    /// `layout`), when it holds them and they agree with its count, sum
    /// and extremes: the bin's smallest value `lo` and how many records
    /// hold `lo + k`, for each `k`. `None` otherwise (the chunk must be
    /// read). Exact: a disagreement (a summary built with another layout,
    /// a damaged one) is never answered.
    pub(crate) fn fine_counts(
        &self,
        layout: &FineLayout,
    ) -> Option<(u64, [u64; FINE_MAX_INTERVAL as usize])> {
        if self.fine == 0 || self.fine == FINE_FULL {
            return None;
        }
        if self.fine >> (layout.interval as u32 * layout.bits) != 0 {
            return None;
        }
        let lo = layout.bin_lo(self.bin)?;
        let width = layout.interval as usize;
        let mask = (1u64 << layout.bits) - 1;
        let mut counts = [0u64; FINE_MAX_INTERVAL as usize];
        let mut saturated = [0usize; 2];
        let mut n_saturated = 0;
        let (mut n, mut sum) = (0u64, 0u128);
        for (k, count) in counts.iter_mut().enumerate().take(width) {
            let c = (self.fine >> (k as u32 * layout.bits)) & mask;
            if c == mask {
                *saturated.get_mut(n_saturated)? = k;
                n_saturated += 1;
            } else {
                *count = c;
                n += c;
                sum += u128::from(lo + k as u64) * u128::from(c);
            }
        }
        // The saturated slots hold the rest of the count and the sum.
        let rest_n = u64::from(self.count).checked_sub(n)?;
        let rest_sum = self.sum.checked_sub(sum)?;
        match n_saturated {
            0 => (rest_n == 0 && rest_sum == 0).then_some(())?,
            1 => {
                let v = u128::from(lo + saturated[0] as u64);
                (rest_sum == v * u128::from(rest_n)).then_some(())?;
                counts[saturated[0]] = rest_n;
            }
            _ => {
                // c_a + c_b = rest_n and (lo+a)·c_a + (lo+b)·c_b = rest_sum,
                // a < b: c_b = (rest_sum − (lo+a)·rest_n) / (b − a).
                let (a, b) = (saturated[0] as u64, saturated[1] as u64);
                let extra = rest_sum.checked_sub(u128::from(lo + a) * u128::from(rest_n))?;
                let step = u128::from(b - a);
                (extra % step == 0).then_some(())?;
                let c_b = u64::try_from(extra / step).ok()?;
                counts[saturated[0]] = rest_n.checked_sub(c_b)?;
                counts[saturated[1]] = c_b;
            }
        }
        if saturated[..n_saturated].iter().any(|&k| counts[k] < mask) {
            return None;
        }
        let mut nonzero = (0..width).filter(|&k| counts[k] > 0);
        let min = nonzero.next().map(|k| lo + k as u64);
        let max = nonzero.next_back().map(|k| lo + k as u64).or(min);
        if min != Some(self.min) || max != Some(self.max) {
            return None;
        }
        Some((lo, counts))
    }

    /// The values [`Self::fine_counts`] gives, in order (tests).
    #[cfg(test)]
    pub(crate) fn fine_values(&self, layout: &FineLayout, out: &mut Vec<u64>) -> Option<()> {
        let (lo, counts) = self.fine_counts(layout)?;
        for (k, &c) in counts.iter().enumerate() {
            out.extend(std::iter::repeat_n(lo + k as u64, c as usize));
        }
        Some(())
    }

    #[inline(always)]
    pub(crate) fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Every value of the summary in order, when its count, sum and
    /// extremes leave only one possibility: one or two values, three (the
    /// middle one is the sum less the extremes), all equal, all but one at
    /// an extreme, or every value one of two neighbours (`max = min + 1`:
    /// the sum says how many are `max`). `None` when they do not (the
    /// chunk must be read), or when they contradict each other.
    ///
    /// A percentile's bin is touched by nearly every chunk of a busy
    /// window, most often by a few records each: those chunks then need no
    /// reading. The values are exact, never estimated.
    pub(crate) fn exact_values(&self, out: &mut Vec<u64>) -> Option<()> {
        let n = u64::from(self.count);
        let (lo, hi) = (self.min, self.max);
        if n == 0 || lo > hi {
            return None;
        }
        let (lo_w, hi_w) = (u128::from(lo), u128::from(hi));
        let sum = self.sum;
        // Values at `hi` when each is `lo` or `hi` (None when impossible).
        let at_hi = |n: u64| -> Option<u64> {
            let base = lo_w * u128::from(n);
            let step = hi_w - lo_w;
            let extra = sum.checked_sub(base)?;
            if step == 0 {
                return (extra == 0).then_some(0);
            }
            (extra % step == 0)
                .then(|| u64::try_from(extra / step).ok())
                .flatten()
                .filter(|&k| k <= n)
        };
        let mut push = |v: u64, k: u64| out.extend(std::iter::repeat_n(v, k as usize));
        match n {
            1 => (lo == hi && sum == lo_w).then(|| push(lo, 1)),
            2 => (sum == lo_w + hi_w).then(|| {
                push(lo, 1);
                push(hi, 1);
            }),
            3 => {
                let mid = sum.checked_sub(lo_w + hi_w)?;
                if mid < lo_w || mid > hi_w {
                    return None;
                }
                push(lo, 1);
                push(mid as u64, 1);
                push(hi, 1);
                Some(())
            }
            _ if hi - lo <= 1 => {
                // Each value is lo or hi; at least one of each when they differ.
                let k = at_hi(n)?;
                if lo != hi && (k == 0 || k == n) {
                    return None;
                }
                push(lo, n - k);
                push(hi, k);
                Some(())
            }
            _ => {
                // All but one at an extreme (the other extreme once).
                if sum == lo_w * u128::from(n - 1) + hi_w {
                    push(lo, n - 1);
                    push(hi, 1);
                    Some(())
                } else if sum == lo_w + hi_w * u128::from(n - 1) {
                    push(lo, 1);
                    push(hi, n - 1);
                    Some(())
                } else {
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{BinSummary, FineLayout};

    fn summary(values: &[u64]) -> BinSummary {
        let mut b = BinSummary::default();
        for &v in values {
            b.add(v);
        }
        b
    }

    /// Brute force over every multiset of up to 6 values in 10..=14: when
    /// `exact_values` answers, its values are the multiset, sorted; it
    /// answers for every count of at most 3, every all-equal set and every
    /// set within two neighbouring values.
    #[test]
    fn exact_values_are_the_values_or_none() {
        fn each(len: usize, from: u64, cur: &mut Vec<u64>, f: &mut dyn FnMut(&[u64])) {
            if cur.len() == len {
                f(cur);
                return;
            }
            for v in from..=14 {
                cur.push(v);
                each(len, v, cur, f);
                cur.pop();
            }
        }
        let mut answered = 0;
        for len in 1..=6 {
            each(len, 10, &mut Vec::new(), &mut |vals| {
                let mut out = Vec::new();
                let got = summary(vals).exact_values(&mut out);
                let (lo, hi) = (vals[0], vals[vals.len() - 1]);
                let must = vals.len() <= 3 || hi - lo <= 1;
                if got.is_some() {
                    assert_eq!(out, vals, "{vals:?}");
                    answered += 1;
                } else {
                    assert!(!must, "{vals:?} not answered");
                    assert!(out.is_empty());
                }
            });
        }
        assert!(answered > 100);
        // Contradictory summaries are not answered.
        let bad = BinSummary {
            bin: 0,
            count: 3,
            min: 10,
            max: 12,
            sum: 100,
            fine: 0,
        };
        assert!(bad.exact_values(&mut Vec::new()).is_none());
    }

    /// Random multisets in one bin of narrow layouts: the per-value counts
    /// give back exactly the sorted values whenever they are kept, they
    /// answer every bin `exact_values` does not unless more than two
    /// values fill their slots, and another layout's reading of them is
    /// refused or the same.
    #[test]
    fn fine_values_are_the_values() {
        use proptest::prelude::*;
        let mut runner = proptest::test_runner::TestRunner::default();
        let strat = (
            1u64..=16,
            1u32..50,
            // Few distinct values and many records: slots saturate.
            prop_oneof![
                proptest::collection::vec(0u64..16, 1..200),
                proptest::collection::vec(0u64..4, 1..600),
            ],
        );
        runner
            .run(&strat, |(interval, bin, offs)| {
                let layout =
                    FineLayout::new(7, interval, 60).ok_or(TestCaseError::fail("layout"))?;
                let lo = 7 + u64::from(bin - 1) * interval;
                let mut vals: Vec<u64> = offs.iter().map(|o| lo + o % interval).collect();
                let mut b = BinSummary {
                    bin,
                    ..BinSummary::default()
                };
                for &v in &vals {
                    b.add(v);
                    layout.add(&mut b.fine, bin, v);
                }
                b.fine = FineLayout::kept(&b);
                vals.sort_unstable();
                // Saturated slots: more than two cannot be solved.
                let slot_max = (1usize << (63 / interval)) - 1;
                let saturated = vals
                    .chunk_by(|a, c| a == c)
                    .filter(|r| r.len() >= slot_max)
                    .count();
                let mut out = Vec::new();
                let fine = b.fine_values(&layout, &mut out);
                let exact = b.exact_values(&mut Vec::new()).is_some();
                if fine.is_some() {
                    prop_assert_eq!(&out, &vals);
                } else {
                    prop_assert!(out.is_empty());
                    prop_assert!(exact || saturated > 2, "{:?} not answered", vals);
                }
                // Another layout's reading of the same counts is refused
                // unless it reads the same values.
                if let Some(other) = FineLayout::new(7, interval % 16 + 1, 60) {
                    let mut o = Vec::new();
                    if b.fine_values(&other, &mut o).is_some() {
                        prop_assert_eq!(&o, &vals);
                    }
                }
                Ok(())
            })
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Overflow bins and values outside the bin never keep counts.
    #[test]
    fn fine_counts_only_for_regular_bins() {
        let layout = FineLayout::new(100, 10, 5).expect("narrow");
        assert!(FineLayout::new(0, 17, 5).is_none());
        let mut f = 0;
        layout.add(&mut f, 0, 3);
        assert_eq!(f, super::FINE_FULL);
        let mut f = 0;
        layout.add(&mut f, 6, 150);
        assert_eq!(f, super::FINE_FULL);
        let mut f = 0;
        layout.add(&mut f, 1, 110);
        assert_eq!(f, super::FINE_FULL);
        let mut f = 0;
        layout.add(&mut f, 2, 110);
        assert_eq!(f, 1);
        // Two saturated slots (100 × 110 and 70 × 111) are solved from
        // the count and sum; a third is not.
        let mut vals: Vec<u64> = [(110, 100), (111, 70), (115, 5)]
            .iter()
            .flat_map(|&(v, n)| std::iter::repeat_n(v, n))
            .collect();
        let summarise = |vals: &[u64]| {
            let mut b = BinSummary {
                bin: 2,
                ..BinSummary::default()
            };
            for &v in vals {
                b.add(v);
                layout.add(&mut b.fine, 2, v);
            }
            b.fine = FineLayout::kept(&b);
            b
        };
        let mut out = Vec::new();
        assert!(summarise(&vals).fine_values(&layout, &mut out).is_some());
        assert_eq!(out, vals);
        vals.extend(std::iter::repeat_n(119, 64));
        assert!(summarise(&vals)
            .fine_values(&layout, &mut Vec::new())
            .is_none());
    }

    /// `find_bin` finds every bin of gapped and gapless lists, and none
    /// that is absent.
    #[test]
    fn find_bin_finds_each_bin() {
        for bins in [vec![1u32, 2, 3, 4, 5], vec![0, 2, 3, 7, 9, 10, 40], vec![5]] {
            let s: Vec<BinSummary> = bins
                .iter()
                .map(|&bin| BinSummary {
                    bin,
                    count: bin + 1,
                    ..BinSummary::default()
                })
                .collect();
            for bin in 0..50 {
                let want = s.iter().find(|b| b.bin == bin).copied();
                assert_eq!(super::find_bin(&s, bin), want, "{bins:?} {bin}");
            }
        }
        assert_eq!(super::find_bin(&[], 3), None);
    }
}
