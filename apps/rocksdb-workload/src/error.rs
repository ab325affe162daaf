//! The workload's error type.

use thiserror::Error;

/// Why the workload could not run or deliver its telemetry.
#[derive(Debug, Error)]
pub enum WorkloadError {
    /// Flags that do not make sense together.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// RocksDB refused to open or to operate.
    #[error("rocksdb at {path}: {source}")]
    RocksDb {
        /// Database directory.
        path: String,
        /// RocksDB's error.
        #[source]
        source: rocksdb::Error,
    },
    /// A file or socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The eBPF probes could not be loaded (the message names the fix).
    #[error("probes: {0}")]
    Probes(#[from] probes::ProbeError),
    /// Delivering telemetry to the destination failed.
    #[error(transparent)]
    Telemetry(#[from] workload_pipeline::PipelineError),
    /// A thread of the workload panicked.
    #[error("the {0} thread panicked")]
    ThreadPanicked(&'static str),
}

impl WorkloadError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> WorkloadError {
        let context = context.into();
        move |source| WorkloadError::Io { context, source }
    }
}
