//! The agent's error type.

use thiserror::Error;

/// Why the agent stopped or could not start.
#[derive(Debug, Error)]
pub enum AgentError {
    /// The flags or the config file are wrong.
    #[error("{0}")]
    Config(String),
    /// The probes could not be loaded or run (the message names the fix).
    #[error(transparent)]
    Probes(#[from] probes::ProbeError),
    /// A wire frame could not be built or sent.
    #[error(transparent)]
    Wire(#[from] telemetry::WireError),
    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}
