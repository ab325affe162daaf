//! One limit on the number of series a store holds, shared by every way in
//! (the telemetry stream, OTLP, line protocol): each admits a new series
//! only through [`SeriesLimit::try_take`], so the bound holds across them,
//! and every refusal is counted (never merged into another series).

use std::sync::atomic::{AtomicU64, Ordering};

/// Default bound (loom-app `--max-series`).
pub const DEFAULT_MAX_SERIES: u64 = 100_000;

/// A shared series budget: `max` series, `used` so far, `refused` attempts
/// past the bound.
#[derive(Debug)]
pub struct SeriesLimit {
    max: u64,
    used: AtomicU64,
    refused: AtomicU64,
}

impl Default for SeriesLimit {
    /// [`DEFAULT_MAX_SERIES`], none used.
    fn default() -> Self {
        SeriesLimit::new(DEFAULT_MAX_SERIES)
    }
}

impl SeriesLimit {
    /// A limit of `max` series, none used.
    pub fn new(max: u64) -> Self {
        SeriesLimit {
            max,
            used: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Counts `n` series the store already holds (they are never refused,
    /// but leave less room for new ones).
    pub fn count_existing(&self, n: u64) {
        self.used.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes room for one new series: true when it fits, false (counted in
    /// [`Self::refused`]) when the bound is reached.
    pub fn try_take(&self) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                (u < self.max).then_some(u + 1)
            })
            .is_ok();
        if !taken {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// The bound.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Series counted so far (existing and admitted).
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// New series refused because the bound was reached.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_bound_holds_across_threads_and_refusals_are_counted() {
        let limit = Arc::new(SeriesLimit::new(1000));
        limit.count_existing(10);
        let taken: u64 = (0..4)
            .map(|_| {
                let l = limit.clone();
                std::thread::spawn(move || (0..500).filter(|_| l.try_take()).count() as u64)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .sum();
        assert_eq!(taken, 990);
        assert_eq!(limit.used(), 1000);
        assert_eq!(limit.refused(), 2000 - 990);
    }
}
