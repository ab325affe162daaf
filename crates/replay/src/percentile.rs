//! The percentile rank rule of recordings' statistics (`data-stats`, the
//! disorder report): nearest rank. (InfluxQL's `percentile()` follows
//! InfluxDB 1.x's own rank, `influxql::influx_rank`.)

/// Nearest-rank percentile of sorted `values` for `q` in `[0, 1]`: the value
/// at 1-based rank `ceil(q * n)` (rank at least 1). `None` when empty.
pub fn percentile_nearest_rank(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_nearest_rank(&v, 0.5), Some(50));
        assert_eq!(percentile_nearest_rank(&v, 0.99), Some(99));
        assert_eq!(percentile_nearest_rank(&v, 0.9999), Some(100));
        assert_eq!(percentile_nearest_rank(&v, 0.0), Some(1));
        assert_eq!(percentile_nearest_rank(&[], 0.5), None);
        assert_eq!(percentile_nearest_rank(&[7], 0.9999), Some(7));
    }
}
