//! The workspace's one small deterministic random number generator and the
//! distributions its users need: the synthetic recording generator, the
//! RocksDB workload's key choice, the fuzz driver's mutations and the OTLP
//! load generator. Fixed algorithm (SplitMix64), so a seed gives the same
//! recording (or the same fuzz inputs) on every machine and every build.

/// SplitMix64 generator (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `[0, n)`; 0 when `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }
    }

    /// Uniform index in `[0, n)`; 0 when `n == 0`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `1 / n` (always when `n` is 0 or 1).
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let word = self.next_u64().to_le_bytes();
            let take = (n - out.len()).min(word.len());
            out.extend_from_slice(&word[..take]);
        }
        out
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Standard normal (Box–Muller, one value per call).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Lognormal with the given median and shape `sigma`.
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }

    /// Pareto with scale `xm` and shape `alpha` (heavy tail, values >= xm).
    pub fn pareto(&mut self, xm: f64, alpha: f64) -> f64 {
        let u = 1.0 - self.uniform(); // (0, 1]
        xm / u.powf(1.0 / alpha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        for _ in 0..1000 {
            let u = a.uniform();
            assert!((0.0..1.0).contains(&u));
            assert!(a.below(10) < 10);
            assert!(a.pareto(100.0, 1.5) >= 100.0);
        }
        for n in [1usize, 2, 3, 1000] {
            assert!(a.index(n) < n);
        }
        assert_eq!(a.index(0), 0);
        assert!(a.one_in(1));
        // one_in(4) holds about a quarter of the time.
        let hits = (0..10_000).filter(|_| a.one_in(4)).count();
        assert!((2_200..2_800).contains(&hits), "{hits} of 10000");
        // bytes: the requested length, and the same bytes for the same seed.
        let (mut c, mut d) = (SplitMix64::new(9), SplitMix64::new(9));
        for n in [0, 1, 7, 8, 9, 33] {
            let x = c.bytes(n);
            assert_eq!(x.len(), n);
            assert_eq!(x, d.bytes(n));
        }
        assert_ne!(c.bytes(32), vec![0u8; 32]);
        b = SplitMix64::new(7);
        // Median of the lognormal is close to the requested median.
        let mut v: Vec<f64> = (0..10001).map(|_| b.lognormal(10.0, 0.5)).collect();
        v.sort_by(|x, y| x.total_cmp(y));
        assert!((v[5000] - 10.0).abs() < 0.5, "median {}", v[5000]);
    }
}
