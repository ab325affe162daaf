//! InfluxDB 1.x's percentile rank rule.
//!
//! InfluxDB 1.x (`query/call_iterator.go`, `NewFloatPercentileReduceSliceFunc`
//! and its integer twin) sorts the window's points by value and takes index
//! `i = floor(n · N / 100 + 0.5) − 1` (0-based), computed in float64; when
//! `i < 0` or `i ≥ n` the result is empty (null). So the 1-based rank is
//! `floor(n·N/100 + 0.5)`, round-half-up of `n·N/100`, where Loom's engine
//! default is `ceil(n·q)`: they differ, e.g. n = 10, N = 99.99 → InfluxDB
//! rank 10, and n = 3, N = 50 → InfluxDB rank 2 (ceil gives 2 too), n = 4,
//! N = 10 → InfluxDB rank 0 (null) where ceil gives 1.

/// 1-based rank InfluxDB 1.x selects for `percentile(x, n_percent)` over `n`
/// points, `None` when InfluxDB returns null.
pub fn influx_rank(n: u64, n_percent: f64) -> Option<u64> {
    let r = ((n as f64) * n_percent / 100.0 + 0.5).floor();
    if r.is_nan() || r < 1.0 || r > n as f64 {
        return None;
    }
    Some(r as u64)
}

#[cfg(test)]
mod tests {
    use super::influx_rank;

    #[test]
    fn matches_influxdb_examples() {
        assert_eq!(influx_rank(10, 99.99), Some(10));
        assert_eq!(influx_rank(4, 10.0), None);
        assert_eq!(influx_rank(4, 50.0), Some(2));
        assert_eq!(influx_rank(5, 50.0), Some(3));
        assert_eq!(influx_rank(0, 50.0), None);
        assert_eq!(influx_rank(7, 100.0), Some(7));
        assert_eq!(influx_rank(7, 0.0), None);
        assert_eq!(influx_rank(7, 150.0), None);
        assert_eq!(influx_rank(20_000_000, 99.99), Some(19_998_000));
    }
}
