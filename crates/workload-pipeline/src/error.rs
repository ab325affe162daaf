//! The telemetry path's error type.

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
