//! What the workload does and where its telemetry goes.

use std::path::PathBuf;
use std::time::Duration;

pub use workload::Destination;

/// How request keys are picked among the loaded records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDistribution {
    /// Zipfian over key ranks with this exponent (YCSB uses 0.99): key 0 is
    /// the most popular, then key 1, …
    Zipfian {
        /// The zipf exponent, > 0.
        constant: f64,
    },
    /// Every record equally likely.
    Uniform,
}

/// The workload's settings; see each field for its default.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// Keys loaded before the run and picked by requests (default 100 000).
    pub records: u64,
    /// Concurrent client connections, one thread each (default 8).
    pub clients: usize,
    /// Fraction of requests that are reads (GET); the rest are updates (SET).
    /// Default 0.5 (YCSB workload A).
    pub read_ratio: f64,
    /// Key popularity (default zipfian, constant 0.99).
    pub distribution: KeyDistribution,
    /// Bytes per value (default 100).
    pub value_size: usize,
    /// Measured run time after the warmup (default 60 s).
    pub duration: Duration,
    /// Time before telemetry and measurement start (default 5 s).
    pub warmup: Duration,
    /// Each client stops after this many requests (warmup included), if set;
    /// the run then ends early when every client is done.
    pub max_requests_per_client: Option<u64>,
    /// Server binary; `None` looks for `valkey-server`, then `redis-server`, in PATH.
    pub server_binary: Option<PathBuf>,
    /// Port the server listens on (127.0.0.1); `None` picks a free one.
    pub port: Option<u16>,
    /// Attach the syscall-latency probe to the server process (phase P2).
    pub syscalls: bool,
    /// Attach the packet probe to loopback for the server's port (phase P3).
    pub packets: bool,
    /// Where telemetry goes.
    pub destination: Destination,
    /// Records per batch from each client thread (default 256).
    pub batch_size: usize,
    /// Batches the channel to the sender holds before new ones are dropped (default 4096).
    pub channel_batches: usize,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            records: 100_000,
            clients: 8,
            read_ratio: 0.5,
            distribution: KeyDistribution::Zipfian { constant: 0.99 },
            value_size: 100,
            duration: Duration::from_secs(60),
            warmup: Duration::from_secs(5),
            max_requests_per_client: None,
            server_binary: None,
            port: None,
            syscalls: false,
            packets: false,
            destination: Destination::Noop,
            batch_size: 256,
            channel_batches: 4096,
        }
    }
}

impl WorkloadConfig {
    /// Phase name: `p1` request records only, `p2` + server syscalls, `p3` + packets.
    pub fn phase(&self) -> &'static str {
        match (self.syscalls, self.packets) {
            (_, true) => "p3",
            (true, false) => "p2",
            (false, false) => "p1",
        }
    }

    /// Checks ranges; the error names the offending flag.
    pub fn validate(&self) -> Result<(), crate::WorkloadError> {
        let bad = |m: &str| Err(crate::WorkloadError::Config(m.to_string()));
        if self.records == 0 {
            return bad("--records must be > 0");
        }
        if self.clients == 0 {
            return bad("--clients must be > 0");
        }
        if !(0.0..=1.0).contains(&self.read_ratio) {
            return bad("--read-ratio must be within 0..=1");
        }
        if let KeyDistribution::Zipfian { constant } = self.distribution {
            if !(constant.is_finite() && constant > 0.0) {
                return bad("--zipf-constant must be a finite number > 0");
            }
        }
        if self.value_size == 0 {
            return bad("--value-size must be > 0");
        }
        if self.batch_size == 0 || self.channel_batches == 0 {
            return bad("--batch-size and the channel size must be > 0");
        }
        if self.port == Some(0) {
            return bad("--port must be > 0 (leave it out to pick a free port)");
        }
        Ok(())
    }
}
