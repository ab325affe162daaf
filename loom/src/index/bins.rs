//! Value bins of a range index and their per-chunk summaries.

use crate::source::RangeIndexSpec;

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
}

/// Maps values to bins: bin 0 is below `min`, bins `1..=n_bins` are regular,
/// bin `n_bins + 1` is at or above `min + interval * n_bins`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bins {
    min: u64,
    interval: u64,
    shift: Option<u32>,
    n_bins: u32,
    top: u64,
}

impl Bins {
    pub(crate) fn new(spec: &RangeIndexSpec) -> Self {
        let interval = spec.interval.max(1);
        let n_bins = spec.n_bins.max(1);
        let top = spec
            .min
            .saturating_add(interval.saturating_mul(u64::from(n_bins)));
        Bins {
            min: spec.min,
            interval,
            shift: interval
                .is_power_of_two()
                .then(|| interval.trailing_zeros()),
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
            let off = v - self.min;
            let b = match self.shift {
                Some(s) => off >> s,
                None => off / self.interval,
            };
            1 + b as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(min: u64, interval: u64, n_bins: u32) -> RangeIndexSpec {
        RangeIndexSpec {
            extractor: |_| 0,
            min,
            interval,
            n_bins,
        }
    }

    #[test]
    fn edges() {
        let b = Bins::new(&spec(10, 5, 3));
        assert_eq!(b.bin_of(0), 0);
        assert_eq!(b.bin_of(9), 0);
        assert_eq!(b.bin_of(10), 1);
        assert_eq!(b.bin_of(14), 1);
        assert_eq!(b.bin_of(15), 2);
        assert_eq!(b.bin_of(24), 3);
        assert_eq!(b.bin_of(25), 4);
        assert_eq!(b.bin_of(u64::MAX), 4);
        let p = Bins::new(&spec(0, 8, 4));
        assert_eq!(p.bin_of(7), 1);
        assert_eq!(p.bin_of(8), 2);
        assert_eq!(p.bin_of(32), 5);
        let huge = Bins::new(&spec(u64::MAX - 1, u64::MAX, 3));
        assert_eq!(huge.bin_of(u64::MAX - 1), 1);
    }
}
