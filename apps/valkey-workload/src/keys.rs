//! Request keys: which record a request touches.

use rand::Rng;
use rand_distr::{Distribution, Zipf};

use crate::config::KeyDistribution;
use crate::WorkloadError;

/// Picks record numbers in `0..records` by the configured popularity.
#[derive(Debug, Clone)]
pub enum KeyChooser {
    /// Zipfian ranks: record `r` has popularity ∝ 1 / (r + 1)^constant. Ranks
    /// are not scrambled as YCSB does: in a hash table which keys are hot
    /// does not matter, only how skewed the popularity is.
    Zipfian(Zipf<f64>),
    /// Uniform over all records.
    Uniform(u64),
}

impl KeyChooser {
    /// A chooser over `records` keys (> 0).
    pub fn new(records: u64, distribution: KeyDistribution) -> Result<KeyChooser, WorkloadError> {
        match distribution {
            KeyDistribution::Uniform => Ok(KeyChooser::Uniform(records)),
            KeyDistribution::Zipfian { constant } => Zipf::new(records, constant)
                .map(KeyChooser::Zipfian)
                .map_err(|e| WorkloadError::Config(format!("--zipf-constant {constant}: {e}"))),
        }
    }

    /// The next record number.
    #[inline]
    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        match self {
            // Zipf samples are whole numbers in 1..=n.
            KeyChooser::Zipfian(z) => (z.sample(rng) as u64).saturating_sub(1),
            KeyChooser::Uniform(n) => rng.gen_range(0..*n),
        }
    }
}

/// The server key of record `n` (YCSB's naming).
pub fn key(n: u64) -> String {
    format!("user{n}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zipfian_is_skewed_and_in_range() {
        let c = KeyChooser::new(1000, KeyDistribution::Zipfian { constant: 0.99 }).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut hits = vec![0u32; 1000];
        for _ in 0..100_000 {
            hits[c.next(&mut rng) as usize] += 1;
        }
        assert!(
            hits[0] > 10 * hits[500].max(1),
            "{} vs {}",
            hits[0],
            hits[500]
        );
        assert!(hits.iter().filter(|&&h| h > 0).count() > 500);
    }

    #[test]
    fn uniform_covers_the_range() {
        let c = KeyChooser::new(10, KeyDistribution::Uniform).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            seen[c.next(&mut rng) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn bad_constant_is_a_config_error() {
        assert!(matches!(
            KeyChooser::new(10, KeyDistribution::Zipfian { constant: -1.0 }),
            Err(WorkloadError::Config(m)) if m.contains("--zipf-constant")
        ));
    }
}
