//! The crate's one error type: where a statement went wrong and why.

use thiserror::Error;

/// Why a query was refused or failed. `Parse` and `Unsupported` are the
/// client's fault (HTTP 400); `Plan` names a semantic problem with an
/// otherwise valid statement (unknown measurement or field, wrong argument);
/// `Limit` means a per-query bound was hit; `Engine` is a storage failure.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// The text is not InfluxQL of the supported grammar.
    #[error("error parsing query: {message} at char {}", pos + 1)]
    Parse {
        /// Byte offset of the offending input (0-based).
        pos: usize,
        /// What was expected and what was found.
        message: String,
    },
    /// Valid InfluxQL that Loom does not answer; names the construct.
    #[error("not supported by Loom: {0}")]
    Unsupported(String),
    /// A semantic error found while planning.
    #[error("{0}")]
    Plan(String),
    /// The query hit its time or row limit.
    #[error("{0}")]
    Limit(String),
    /// The storage engine failed.
    #[error("storage: {0}")]
    Engine(String),
}

impl From<loom::Error> for Error {
    fn from(e: loom::Error) -> Self {
        Error::Engine(e.to_string())
    }
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
