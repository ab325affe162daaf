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
}

impl Default for BinSummary {
    fn default() -> Self {
        BinSummary {
            bin: 0,
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }
}

impl BinSummary {
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
    use super::BinSummary;

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
        };
        assert!(bad.exact_values(&mut Vec::new()).is_none());
    }
}
