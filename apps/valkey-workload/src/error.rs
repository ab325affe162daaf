//! The workload's error type.

use thiserror::Error;

/// Why the workload could not run or deliver its telemetry.
#[derive(Debug, Error)]
pub enum WorkloadError {
    /// Flags that do not make sense together (the message names the flag).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Neither `valkey-server` nor `redis-server` is installed.
    #[error(
        "no valkey-server or redis-server in PATH: install one (Debian: apt-get install redis-server) or pass --server-binary"
    )]
    ServerNotFound,
    /// The server did not start or stopped answering.
    #[error("server {binary}: {detail}")]
    Server {
        /// The server binary.
        binary: String,
        /// What went wrong (includes the end of its log when there is one).
        detail: String,
    },
    /// A request or the initial load failed.
    #[error("{context}: {source}")]
    Redis {
        /// What was being done.
        context: String,
        /// The client's error.
        #[source]
        source: redis::RedisError,
    },
    /// A file, process or socket operation failed.
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

    pub(crate) fn redis(
        context: impl Into<String>,
    ) -> impl FnOnce(redis::RedisError) -> WorkloadError {
        let context = context.into();
        move |source| WorkloadError::Redis { context, source }
    }
}
