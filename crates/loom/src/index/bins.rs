//! Value bins of a range index: which bin a value falls in. (Their
//! per-chunk summaries are [`BinSummary`](crate::bin_summary::BinSummary).)

/// Division by a constant through a precomputed multiplier (the round-up
/// method of Granlund and Montgomery): exact for every u64 dividend, and a
/// multiply and two shifts instead of a 64-bit divide on the indexer's
/// per-record path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Divider {
    Shift(u32),
    Magic { m: u64, shift: u32 },
}

impl Divider {
    pub(crate) fn new(d: u64) -> Self {
        let d = d.max(1);
        if d.is_power_of_two() {
            return Divider::Shift(d.trailing_zeros());
        }
        let l = 64 - (d - 1).leading_zeros();
        let m = (((1u128 << 64) * ((1u128 << l) - u128::from(d))) / u128::from(d)) as u64 + 1;
        Divider::Magic { m, shift: l - 1 }
    }

    #[inline(always)]
    pub(crate) fn div(&self, n: u64) -> u64 {
        match *self {
            Divider::Shift(s) => n >> s,
            Divider::Magic { m, shift } => {
                let t = ((u128::from(m) * u128::from(n)) >> 64) as u64;
                (t + ((n - t) >> 1)) >> shift
            }
        }
    }
}

/// Maps values to bins: bin 0 is below `min`, bins `1..=n_bins` are regular,
/// bin `n_bins + 1` is at or above `min + interval * n_bins`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bins {
    min: u64,
    divider: Divider,
    n_bins: u32,
    top: u64,
}

impl Bins {
    pub(crate) fn new(min: u64, interval: u64, n_bins: u32) -> Self {
        let interval = interval.max(1);
        let n_bins = n_bins.max(1);
        let top = min.saturating_add(interval.saturating_mul(u64::from(n_bins)));
        Bins {
            min,
            divider: Divider::new(interval),
            n_bins,
            top,
        }
    }

    /// Number of bins including the two overflow bins.
    pub(crate) fn total(&self) -> usize {
        self.n_bins as usize + 2
    }

    #[inline(always)]
    pub(crate) fn bin_of(&self, v: u64) -> u32 {
        if v < self.min {
            0
        } else if v >= self.top {
            self.n_bins + 1
        } else {
            1 + self.divider.div(v - self.min) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Bins {
        fn new_from((min, interval, n_bins): (u64, u64, u32)) -> Self {
            Bins::new(min, interval, n_bins)
        }
    }

    fn spec(min: u64, interval: u64, n_bins: u32) -> (u64, u64, u32) {
        (min, interval, n_bins)
    }

    proptest::proptest! {
        #[test]
        fn divider_is_exact(n: u64, d in 1u64..) {
            proptest::prop_assert_eq!(Divider::new(d).div(n), n / d);
        }

        #[test]
        fn divider_is_exact_for_small_divisors(n: u64, d in 1u64..5000) {
            proptest::prop_assert_eq!(Divider::new(d).div(n), n / d);
        }
    }

    #[test]
    fn divider_extremes() {
        for d in [
            1u64,
            2,
            3,
            7,
            10,
            1000,
            u64::MAX / 64,
            u64::MAX - 1,
            u64::MAX,
            (1 << 63) + 1,
        ] {
            let dv = Divider::new(d);
            for n in [
                0u64,
                1,
                d - 1,
                d,
                d.saturating_add(1),
                u64::MAX - 1,
                u64::MAX,
            ] {
                assert_eq!(dv.div(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn edges() {
        let b = Bins::new_from(spec(10, 5, 3));
        assert_eq!(b.bin_of(0), 0);
        assert_eq!(b.bin_of(9), 0);
        assert_eq!(b.bin_of(10), 1);
        assert_eq!(b.bin_of(14), 1);
        assert_eq!(b.bin_of(15), 2);
        assert_eq!(b.bin_of(24), 3);
        assert_eq!(b.bin_of(25), 4);
        assert_eq!(b.bin_of(u64::MAX), 4);
        let p = Bins::new_from(spec(0, 8, 4));
        assert_eq!(p.bin_of(7), 1);
        assert_eq!(p.bin_of(8), 2);
        assert_eq!(p.bin_of(32), 5);
        let huge = Bins::new_from(spec(u64::MAX - 1, u64::MAX, 3));
        assert_eq!(huge.bin_of(u64::MAX - 1), 1);
    }
}
