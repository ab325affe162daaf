//! Statement texts over the data model (`kv`, `syscall`, `pagecache`,
//! `packet`; see docs/design.md "Data model").

/// Percentile asked by the questions (InfluxQL takes percent).
pub const PERCENT: f64 = 99.99;
/// "Slow" for the ablation count: latency > 80 µs.
pub const ABLATION_ABOVE_US: u64 = 80;

/// KV reads: `FROM … WHERE` prefix the conditions below are appended to.
pub const KV_READS: &str = "kv WHERE op = 'read'";
// `name` is an InfluxQL keyword: the tag must be a quoted identifier
// (`WHERE name = …` is a parse error in influxd 1.6).
/// `pread64` calls.
pub const PREAD64: &str = "syscall WHERE \"name\" = 'pread64'";
/// `sendto` calls.
pub const SENDTO: &str = "syscall WHERE \"name\" = 'sendto'";
/// `write` calls (Redis 7 and Valkey reply with `write(2)`).
pub const WRITE: &str = "syscall WHERE \"name\" = 'write'";

/// The ns time predicate of the µs window `[t0, t1]`.
pub fn time_range(t0_us: u64, t1_us: u64) -> String {
    format!(
        "time >= {} AND time <= {}",
        t0_us.saturating_mul(1000),
        t1_us.saturating_mul(1000).saturating_add(999)
    )
}

/// P1/P2: count, max and p99.99 of `duration_us` of one series
/// (`from_where` such as [`KV_READS`]).
pub fn latency(from_where: &str, t0: u64, t1: u64) -> String {
    format!(
        "SELECT count(duration_us), max(duration_us), percentile(duration_us, {PERCENT}) FROM {from_where} AND {}",
        time_range(t0, t1)
    )
}

/// P3: page-cache insertions in the window.
pub fn page_cache_count(t0: u64, t1: u64) -> String {
    format!(
        "SELECT count(pfn) FROM pagecache WHERE {}",
        time_range(t0, t1)
    )
}

/// The ablation: KV reads slower than [`ABLATION_ABOVE_US`].
pub fn ablation_count(t0: u64, t1: u64) -> String {
    count_above(KV_READS, ABLATION_ABOVE_US, t0, t1)
}

/// Count and p99.99 of `duration_us` of one series.
pub fn percentile(from_where: &str, t0: u64, t1: u64) -> String {
    format!(
        "SELECT count(duration_us), percentile(duration_us, {PERCENT}) FROM {from_where} AND {}",
        time_range(t0, t1)
    )
}

/// Records of one series slower than `above` µs.
pub fn count_above(from_where: &str, above: u64, t0: u64, t1: u64) -> String {
    format!(
        "SELECT count(duration_us) FROM {from_where} AND duration_us > {above} AND {}",
        time_range(t0, t1)
    )
}

/// The slowest record of one series: `max()` alone is a selector, so the
/// row's time is that record's (the earliest, if tied).
pub fn slowest(from_where: &str, t0: u64, t1: u64) -> String {
    format!(
        "SELECT max(duration_us) FROM {from_where} AND {}",
        time_range(t0, t1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_use_the_data_model() {
        assert_eq!(
            latency(KV_READS, 1, 2),
            "SELECT count(duration_us), max(duration_us), percentile(duration_us, 99.99) FROM kv WHERE op = 'read' AND time >= 1000 AND time <= 2999"
        );
        assert!(latency(PREAD64, 0, 0).contains("FROM syscall WHERE \"name\" = 'pread64' AND"));
        assert_eq!(
            page_cache_count(5, 5),
            "SELECT count(pfn) FROM pagecache WHERE time >= 5000 AND time <= 5999"
        );
        assert_eq!(
            ablation_count(0, 1),
            "SELECT count(duration_us) FROM kv WHERE op = 'read' AND duration_us > 80 AND time >= 0 AND time <= 1999"
        );
        assert_eq!(
            slowest(SENDTO, 2, 3),
            "SELECT max(duration_us) FROM syscall WHERE \"name\" = 'sendto' AND time >= 2000 AND time <= 3999"
        );
    }

    #[test]
    fn time_bounds_saturate() {
        assert_eq!(
            time_range(u64::MAX, u64::MAX),
            format!("time >= {} AND time <= {}", u64::MAX, u64::MAX)
        );
    }
}
