//! The crate's one error type.

/// Why an export (or opening its target) failed. Every variant names the
/// target or file it concerns; nothing in the store is changed by a failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The `--to` URL cannot be used (scheme, bucket, path).
    #[error("bad export target {url:?}: {reason}")]
    BadTarget {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The object store refused or failed a request.
    #[error("{op} {location} on {target}: {source}")]
    Store {
        /// What was being done (`writing`, `reading`, `listing`).
        op: &'static str,
        /// The object's path inside the target.
        location: String,
        /// The target, as given.
        target: String,
        /// The object store's error (boxed: it is large).
        #[source]
        source: Box<object_store::Error>,
    },
    /// The target answered, but not in a way that lets export go on
    /// (missing bucket, missing credentials, full disk).
    #[error("{target}: {reason}")]
    Target {
        /// The target, as given.
        target: String,
        /// The cause, in words.
        reason: String,
    },
    /// Reading the store failed.
    #[error("reading the store: {0}")]
    Engine(#[from] loom::Error),
    /// Encoding Parquet failed.
    #[error("encoding {file}: {reason}")]
    Encode {
        /// The file being built.
        file: String,
        /// The encoder's error.
        reason: String,
    },
    /// The export manifest in the target cannot be understood.
    #[error("export manifest {location} on {target} is unreadable: {reason}")]
    Manifest {
        /// Its path inside the target.
        location: String,
        /// The target, as given.
        target: String,
        /// Why.
        reason: String,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
