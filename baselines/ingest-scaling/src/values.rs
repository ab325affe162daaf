//! What each record carries: a fixed random payload whose first
//! min(8, size) bytes are replaced by a latency-like value that varies per
//! record, so a range index on it pays for real bins (a constant value would
//! put every record in one bin).
//!
//! The values are log-normal (median 50 µs, σ = 1: p99 ≈ 510 µs,
//! p99.99 ≈ 2 ms, a heavy tail like request latencies), drawn once from a
//! fixed seed into a table of [`TABLE_LEN`] values before the clock starts;
//! record `k` of a writer carries entry `k mod TABLE_LEN`. Writing one costs
//! an 8-byte store per record, the same for every store.

use rand::{Rng, RngCore, SeedableRng};

/// Seed of the payload bytes, so every run writes the same bytes.
pub const PAYLOAD_SEED: u64 = 0x5eed_1009;
/// Seed of the value table.
pub const VALUES_SEED: u64 = 0x1a7e_0c1e;
/// Values in the table (512 KiB: stays in cache, long enough that the
/// sequence does not repeat within a chunk).
pub const TABLE_LEN: usize = 1 << 16;
/// Median of the values, µs.
pub const MEDIAN_US: f64 = 50.0;
/// σ of the values' logarithm.
pub const SIGMA: f64 = 1.0;

/// The bytes of every record of one run.
pub struct Payloads {
    base: Vec<u8>,
    values: Vec<u64>,
}

impl Payloads {
    /// Payloads of `size` bytes (at least 1).
    pub fn new(size: usize) -> Payloads {
        let mut base = vec![0u8; size];
        rand::rngs::StdRng::seed_from_u64(PAYLOAD_SEED).fill_bytes(&mut base);
        Payloads {
            base,
            values: latencies(TABLE_LEN),
        }
    }

    /// A buffer to fill with [`Self::fill`].
    pub fn buffer(&self) -> Vec<u8> {
        self.base.clone()
    }

    /// Makes `buf` (from [`Self::buffer`]) the payload of record `k`.
    #[inline]
    pub fn fill(&self, k: u64, buf: &mut [u8]) {
        let v = self.values[k as usize % TABLE_LEN].to_le_bytes();
        let n = buf.len().min(8);
        buf[..n].copy_from_slice(&v[..n]);
    }

    /// The payload of record `k`, as a new vector (for checks).
    pub fn record(&self, k: u64) -> Vec<u8> {
        let mut b = self.buffer();
        self.fill(k, &mut b);
        b
    }
}

/// `n` log-normal values (µs, at least 1) from [`VALUES_SEED`].
pub fn latencies(n: usize) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(VALUES_SEED);
    (0..n)
        .map(|_| {
            // Box–Muller: a standard normal from two uniforms in (0, 1].
            let u1: f64 = 1.0 - rng.gen::<f64>();
            let u2: f64 = rng.gen::<f64>();
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            (MEDIAN_US * (SIGMA * z).exp()).max(1.0) as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fixed_and_heavy_tailed() {
        let mut v = latencies(TABLE_LEN);
        assert_eq!(v, latencies(TABLE_LEN));
        v.sort_unstable();
        let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
        assert!((40..=60).contains(&q(0.5)), "median {}", q(0.5));
        assert!(q(0.99) > 5 * q(0.5), "p99 {} median {}", q(0.99), q(0.5));
        assert!(q(0.9999) > 20 * q(0.5), "p99.99 {}", q(0.9999));
    }

    #[test]
    fn records_differ_in_their_value_only() {
        let p = Payloads::new(16);
        let (a, b) = (p.record(0), p.record(1));
        assert_eq!(a[8..], b[8..]);
        assert_ne!(a, b);
        assert_eq!(
            u64::from_le_bytes(a[..8].try_into().unwrap()),
            latencies(1)[0]
        );
        // Shorter payloads carry the value's low bytes.
        assert_eq!(Payloads::new(3).record(0)[..], a[..3]);
    }
}
