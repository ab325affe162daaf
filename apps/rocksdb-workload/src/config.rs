//! What the workload does and where its telemetry goes.

use std::path::PathBuf;
use std::time::Duration;

pub use workload::Destination;

/// The workload's settings; see each field for its default.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// Number of RocksDB databases in the process (default 3).
    pub instances: usize,
    /// Worker threads per database (default 16).
    pub threads_per_instance: usize,
    /// Fraction of operations that are reads (default 0.9).
    pub read_ratio: f64,
    /// Reads pick uniformly among keys `0..hot_keys` (default 100 000), all loaded before the run.
    pub hot_keys: u64,
    /// Writes pick uniformly among keys `0..key_space` (default 100 000 000).
    pub key_space: u64,
    /// Bytes per written value (default 128).
    pub value_size: usize,
    /// Measured run time after the warmup (default 60 s).
    pub duration: Duration,
    /// Time before telemetry and measurement start (default 15 s).
    pub warmup: Duration,
    /// Directory holding one sub-directory per database; emptied at start.
    pub rocksdb_path: PathBuf,
    /// Drop the page cache this often (`None`: never). Default 10 s.
    pub drop_caches_interval: Option<Duration>,
    /// Attach the syscall-latency probe to this process.
    pub syscalls: bool,
    /// Attach the page-cache probe to this process.
    pub page_cache: bool,
    /// Where telemetry goes.
    pub destination: Destination,
    /// Records per batch from each worker thread (default 256).
    pub batch_size: usize,
    /// Batches the channel to the sender holds before new ones are dropped (default 4096).
    pub channel_batches: usize,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            instances: 3,
            threads_per_instance: 16,
            read_ratio: 0.9,
            hot_keys: 100_000,
            key_space: 100_000_000,
            value_size: 128,
            duration: Duration::from_secs(60),
            warmup: Duration::from_secs(15),
            rocksdb_path: PathBuf::from("/tmp/loom-rocksdb-workload"),
            drop_caches_interval: Some(Duration::from_secs(10)),
            syscalls: false,
            page_cache: false,
            destination: Destination::Noop,
            batch_size: 256,
            channel_batches: 4096,
        }
    }
}

impl WorkloadConfig {
    /// Phase name of the DESIGN: `p1` app records only, `p2` + syscalls, `p3` + page cache.
    pub fn phase(&self) -> &'static str {
        match (self.syscalls, self.page_cache) {
            (_, true) => "p3",
            (true, false) => "p2",
            (false, false) => "p1",
        }
    }

    /// Checks ranges; the error names the offending setting.
    pub fn validate(&self) -> Result<(), crate::WorkloadError> {
        let bad = |m: &str| Err(crate::WorkloadError::Config(m.to_string()));
        if self.instances == 0 || self.threads_per_instance == 0 {
            return bad("--instances and --threads-per-instance must be > 0");
        }
        if !(0.0..=1.0).contains(&self.read_ratio) {
            return bad("--read-ratio must be within 0..=1");
        }
        if self.hot_keys == 0 || self.key_space == 0 {
            return bad("--hot-keys and --key-space must be > 0");
        }
        if self.batch_size == 0 || self.channel_batches == 0 {
            return bad("--batch-size and --channel-batches must be > 0");
        }
        Ok(())
    }
}
