//! The paper's named questions and the InfluxQL statements that ask them.
//!
//! loom-app runs these statements in process through the `influxql` crate
//! (the same parse → plan → execute path as its HTTP endpoint); influx-app
//! sends them to influxd. One text per question, so both systems answer the
//! same statement with the same percentile rule (InfluxDB 1.x's nearest
//! rank, see `influxql::influx_rank`).
//!
//! Windows are `[t0, t1]` in µs since the Unix epoch, inclusive. The time
//! predicate is written in ns (InfluxQL's integer time unit) as
//! `time >= t0·1000 AND time <= t1·1000 + 999`: Loom stores µs, so the
//! bounds select exactly `[t0, t1]`; influx-app stores a record of µs `t` at
//! `t·1000 + k` ns (`k` < 1000 keeps points of one µs apart), which the same
//! bounds select too.

mod query;
mod statement;

pub use query::Query;
pub use statement::{
    ablation_count, count_above, latency, page_cache_count, percentile, slowest, time_range,
    ABLATION_ABOVE_US, KV_READS, PERCENT, PREAD64, SENDTO, WRITE,
};
