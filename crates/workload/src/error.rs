//! The errors of the telemetry path and of the shared run.

use thiserror::Error;

/// Why telemetry could not be delivered to its destination.
#[derive(Debug, Error)]
pub enum PipelineError {
    /// A file or socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Sending frames over TCP or into a raw file failed.
    #[error("sending telemetry: {0}")]
    Wire(#[from] telemetry::WireError),
    /// Writing the recording file failed.
    #[error("writing the recording: {0}")]
    Recording(#[from] telemetry::RecordingError),
}

impl PipelineError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> PipelineError {
        let context = context.into();
        move |source| PipelineError::Io { context, source }
    }
}

/// Why the shared part of a run ([`crate::run`]) failed; each workload's
/// error wraps it (`From<RunError>`).
#[derive(Debug, Error)]
pub enum RunError {
    /// A thread could not be started.
    #[error("spawning the {what} thread: {source}")]
    Spawn {
        /// Which thread.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The eBPF probes could not be loaded (the message names the fix).
    #[error("probes: {0}")]
    Probes(#[from] probes::ProbeError),
    /// Delivering telemetry to the destination failed.
    #[error(transparent)]
    Telemetry(#[from] PipelineError),
    /// A thread of the workload panicked.
    #[error("the {0} thread panicked")]
    ThreadPanicked(&'static str),
}
