//! The one error type of the engine.

use std::path::PathBuf;

use crate::source::SourceId;

/// Everything that can go wrong in the engine. Variants carry the context a
/// person needs to act on the message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// File or directory the call was about.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Bytes read back from memory or disk do not decode.
    #[error("corrupted data at log address {address}: {reason}")]
    Corrupted {
        /// Log address of the chunk that failed to decode.
        address: u64,
        /// What was wrong.
        reason: String,
    },
    /// A push carried a timestamp older than the source's newest one.
    #[error(
        "timestamp {timestamp_us} µs is older than source {source_id}'s newest {newest_us} µs"
    )]
    OutOfOrder {
        /// Source the push was for.
        source_id: SourceId,
        /// Rejected timestamp.
        timestamp_us: u64,
        /// Newest timestamp already stored for the source.
        newest_us: u64,
    },
    /// A record does not fit in one chunk.
    #[error("record of {len} bytes exceeds the maximum of {max} bytes (chunk_size {chunk_size})")]
    RecordTooLarge {
        /// Size of the rejected record.
        len: usize,
        /// Largest record this configuration accepts.
        max: usize,
        /// Configured chunk size.
        chunk_size: usize,
    },
    /// A handle or id that was never declared.
    #[error("unknown source {0}")]
    UnknownSource(SourceId),
    /// A handle that does not belong to this writer.
    #[error("invalid source handle {0}")]
    InvalidHandle(u32),
    /// The query needs a range index and the source has none.
    #[error("source {0} has no range index")]
    NoRangeIndex(SourceId),
    /// A source was declared again with a different range index.
    #[error("source {0} is already declared with a different range index")]
    IndexMismatch(SourceId),
    /// A configuration value is out of its allowed range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A query argument is out of its allowed range.
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// The flusher thread failed earlier; nothing after that point is durable.
    #[error("background flush failed: {0}")]
    FlushFailed(String),
    /// Writing to disk fails (e.g. the disk is full) and every in-memory
    /// block is waiting for it: the record was not stored. The flusher keeps
    /// retrying; pushes succeed again once a write does.
    #[error("record not stored: writing to disk fails ({0}); retrying")]
    StorageFailing(String),
    /// Another process holds the store's writer lock.
    #[error("{} is locked by another writer{}", dir.display(), holder.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Locked {
        /// The store directory.
        dir: PathBuf,
        /// Pid written by the holder, if readable.
        holder: Option<u32>,
    },
    /// A schema that is not valid (names, offsets, index).
    #[error("invalid schema: {0}")]
    InvalidSchema(String),
    /// A source was declared again with a different schema than the stored one.
    #[error("source {0} is already declared with a different schema")]
    SchemaMismatch(SourceId),
}

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupted(address: u64, reason: impl Into<String>) -> Self {
        Error::Corrupted {
            address,
            reason: reason.into(),
        }
    }
}
