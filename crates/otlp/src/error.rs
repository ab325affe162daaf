//! The crate's one error type: why a request body could not be read.

use thiserror::Error;

/// Why an export request's body was refused. Every variant is the
/// client's fault (OTLP/HTTP 400 or 413, gRPC INVALID_ARGUMENT or
/// RESOURCE_EXHAUSTED): retrying the same body cannot succeed.
#[derive(Debug, Error)]
pub enum Error {
    /// The body is not a protobuf message of the request type.
    #[error("malformed protobuf {what}: {source}")]
    Protobuf {
        /// The expected message.
        what: &'static str,
        /// What prost found wrong.
        source: prost::DecodeError,
    },
    /// The body is not OTLP/JSON of the request type.
    #[error("malformed JSON {what}: {source}")]
    Json {
        /// The expected message.
        what: &'static str,
        /// What serde_json found wrong (with line and column).
        source: serde_json::Error,
    },
    /// The body, or what it decompresses to, is larger than allowed.
    #[error("request body larger than the limit of {limit} bytes (--otlp-max-body-bytes)")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A gzip or deflate body that does not decompress.
    #[error("malformed compressed body: {0}")]
    Gzip(std::io::Error),
}

impl Error {
    /// Whether the error is the body's size (HTTP 413, gRPC RESOURCE_EXHAUSTED).
    pub fn is_too_large(&self) -> bool {
        matches!(self, Error::TooLarge { .. })
    }
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
