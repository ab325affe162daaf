//! Error types of the telemetry crate: one enum per decoder layer.

/// A batch payload or a single record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A record's byte slice does not have its kind's fixed length.
    #[error("{kind} record has {got} bytes, expected {expected}")]
    BadRecordLength {
        /// Kind name.
        kind: &'static str,
        /// Fixed encoded length of the kind.
        expected: usize,
        /// Length found.
        got: usize,
    },
    /// A field holds a value outside its domain.
    #[error("{kind} record field {field} has invalid value {value}")]
    BadField {
        /// Kind name.
        kind: &'static str,
        /// Field name.
        field: &'static str,
        /// Value found.
        value: u64,
    },
    /// A kind tag byte is not one of the known kinds.
    #[error("unknown record kind tag {tag} at payload offset {offset}")]
    UnknownKind {
        /// Tag found.
        tag: u8,
        /// Offset of the tag in the payload.
        offset: usize,
    },
    /// The payload ends in the middle of a record.
    #[error("payload truncated inside record {index} at offset {offset}")]
    TruncatedRecord {
        /// Index of the incomplete record.
        index: u32,
        /// Offset of its tag byte.
        offset: usize,
    },
    /// The payload holds more bytes after the declared number of records.
    #[error("payload has {extra} bytes after the declared {declared} records")]
    TrailingBytes {
        /// Declared record count.
        declared: u32,
        /// Bytes left over.
        extra: usize,
    },
    /// The declared record count cannot fit in the payload length.
    #[error("declared {declared} records cannot fit in a {payload_len}-byte payload")]
    CountTooLarge {
        /// Declared record count.
        declared: u32,
        /// Payload length.
        payload_len: usize,
    },
}

/// A TCP wire frame was rejected. Any error closes the connection it came from.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// Reading from or writing to the stream failed.
    #[error("i/o error while {context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The frame does not start with the frame magic.
    #[error("bad frame magic {found:02x?} (expected {expected:02x?})")]
    BadMagic {
        /// Bytes found.
        found: [u8; 4],
        /// Expected magic.
        expected: [u8; 4],
    },
    /// The frame's format version is not supported.
    #[error("unsupported frame version {found} (supported: {supported})")]
    UnsupportedVersion {
        /// Version found.
        found: u16,
        /// Supported version.
        supported: u16,
    },
    /// Reserved flag bits are set.
    #[error("frame has unknown flags {0:#06x}")]
    BadFlags(u16),
    /// The declared payload length exceeds the receiver's bound.
    #[error("frame payload of {len} bytes exceeds the limit of {max} bytes")]
    PayloadTooLarge {
        /// Declared payload length.
        len: u64,
        /// Receiver's limit.
        max: u64,
    },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame: needed {needed} bytes, got {got}")]
    Truncated {
        /// Bytes needed for the frame part being read.
        needed: usize,
        /// Bytes received before the end.
        got: usize,
    },
    /// The frame's CRC32C does not match its header and payload.
    #[error("frame checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// Checksum in the frame.
        stored: u32,
        /// Checksum computed over the received bytes.
        computed: u32,
    },
    /// The payload passed the checksum but does not decode.
    #[error("bad frame payload: {0}")]
    Payload(#[from] DecodeError),
    /// A version-2 frame type byte is unknown.
    #[error("unknown frame type {0}")]
    BadFrameType(u8),
    /// A control frame came where only data frames are read.
    #[error("unexpected {0:?} control frame")]
    UnexpectedControl(crate::wire::FrameType),
    /// The receiver refused the connection (its reason).
    #[error("the receiver refused the connection: {0}")]
    Refused(String),
    /// A control frame is malformed or out of place (the message says how).
    #[error("bad control frame: {0}")]
    BadControl(String),
}

/// A recording file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// File I/O failed.
    #[error("i/o error while {context}: {source}")]
    Io {
        /// What was being done (includes the path when known).
        context: String,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with the recording magic.
    #[error("not a recording file: bad magic {found:02x?}")]
    BadMagic {
        /// Bytes found.
        found: Vec<u8>,
    },
    /// The recording format version is not supported.
    #[error("unsupported recording version {found} (supported: {supported})")]
    UnsupportedVersion {
        /// Version found.
        found: u16,
        /// Supported version.
        supported: u16,
    },
    /// The header is malformed (length, text fields, flags).
    #[error("bad recording header: {0}")]
    BadHeader(String),
    /// The header checksum does not match.
    #[error("recording header checksum mismatch")]
    HeaderChecksum,
    /// The file ends inside the header or a batch.
    #[error("recording truncated in {what} at byte offset {offset}")]
    Truncated {
        /// Which part was incomplete (`header`, `batch 12 header`, ...).
        what: String,
        /// Byte offset where the incomplete part starts.
        offset: u64,
    },
    /// A batch block does not start with the batch magic.
    #[error("batch {index} at byte offset {offset}: bad batch magic")]
    BadBatchMagic {
        /// Batch index (0-based).
        index: u64,
        /// Byte offset of the block.
        offset: u64,
    },
    /// A batch declares sizes beyond the reader's bounds.
    #[error("batch {index}: {what} of {len} bytes exceeds the limit of {max}")]
    BatchTooLarge {
        /// Batch index (0-based).
        index: u64,
        /// Which length (`compressed length`, `raw length`).
        what: &'static str,
        /// Declared length.
        len: u64,
        /// Limit.
        max: u64,
    },
    /// A batch block's checksum does not match.
    #[error("batch {index} at byte offset {offset}: checksum mismatch")]
    BatchChecksum {
        /// Batch index (0-based).
        index: u64,
        /// Byte offset of the block.
        offset: u64,
    },
    /// A batch's compressed bytes do not decompress to the declared length.
    #[error("batch {index}: decompression failed: {reason}")]
    Decompress {
        /// Batch index (0-based).
        index: u64,
        /// Reason.
        reason: String,
    },
    /// A batch's payload does not decode.
    #[error("batch {index}: {source}")]
    Payload {
        /// Batch index (0-based).
        index: u64,
        /// Decoding error.
        #[source]
        source: DecodeError,
    },
    /// A batch to write is too large for the format.
    #[error("batch to write is too large: {0} payload bytes")]
    WriteTooLarge(usize),
}
