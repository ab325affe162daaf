//! Names of the questions, as the command line and the logs spell them.

/// Which question to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Query {
    /// Max and p99.99 KV read latency.
    RocksdbP1,
    /// Max and p99.99 `pread64` latency.
    RocksdbP2,
    /// Count of page-cache events.
    RocksdbP3,
    /// KV reads slower than the window's p99.99 of KV reads.
    ValkeyP1,
    /// valkey-p1, plus `sendto` (and `write`) calls slower than their p99.99.
    ValkeyP2,
    /// The slowest KV read, then the packets within ±5 s of it.
    ValkeyP3,
    /// Count of KV reads slower than 80 µs, reading chunks without an index.
    AblationNoindex,
    /// Same statement, time index only.
    AblationOnlytime,
    /// Same statement, range index only.
    AblationOnlyrange,
    /// Same statement, time and range index.
    AblationTimerange,
    /// Ingest (and index) only; no queries.
    ProbeEffect,
}

impl Query {
    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Query::RocksdbP1 => "rocksdb-p1",
            Query::RocksdbP2 => "rocksdb-p2",
            Query::RocksdbP3 => "rocksdb-p3",
            Query::ValkeyP1 => "valkey-p1",
            Query::ValkeyP2 => "valkey-p2",
            Query::ValkeyP3 => "valkey-p3",
            Query::AblationNoindex => "ablation-noindex",
            Query::AblationOnlytime => "ablation-onlytime",
            Query::AblationOnlyrange => "ablation-onlyrange",
            Query::AblationTimerange => "ablation-timerange",
            Query::ProbeEffect => "probe-effect",
        }
    }

    /// Whether this is one of the four ablation questions (one statement,
    /// four ways for Loom to reach the records).
    pub fn is_ablation(self) -> bool {
        matches!(
            self,
            Query::AblationNoindex
                | Query::AblationOnlytime
                | Query::AblationOnlyrange
                | Query::AblationTimerange
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn command_line_names_are_the_output_names() {
        for q in Query::value_variants() {
            let pv = q.to_possible_value().map(|p| p.get_name().to_string());
            assert_eq!(pv.as_deref(), Some(q.name()));
        }
    }
}
