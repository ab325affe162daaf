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
    /// The shared run failed: a thread, the probes or the telemetry path.
    #[error(transparent)]
    Run(#[from] workload::RunError),
}

impl WorkloadError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> WorkloadError {
        let context = context.into();
        move |source| WorkloadError::Io { context, source }
    }
}
