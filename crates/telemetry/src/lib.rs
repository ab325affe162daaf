//! Telemetry records shared by every Loom app: record kinds and their compact
//! encodings, stable source ids, batches, the TCP wire frame format and the
//! recording file format.
//!
//! - [`record`]: KV op (24 B), syscall (28 B), page cache (44 B), packet
//!   (48 B), block I/O (44 B) and run-queue (28 B) records; fixed little-endian encodings that are stored as-is in the
//!   engine; index-value extractors `fn(&[u8]) -> u64` (never panic, 0 on short
//!   input).
//! - [`model`]: the data model (measurement, tags, fields at byte offsets,
//!   range index) of every source, shared by the endpoints and InfluxQL.
//! - [`source`]: source id = FNV-1a 64 of a tag such as `kv/read` or `syscall/17`.
//! - [`raw`]: validating a payload and reading its records' kind, source key
//!   and event time in place, for endpoints that store the wire bytes as-is.
//! - [`batch`]: a batch is an arrival time (µs) plus records; its payload is the
//!   records back to back, each a kind tag byte then its encoding.
//! - [`wire`]: TCP framing (`LMTF` magic, version, record count, payload length,
//!   arrival time, CRC32C); every frame is validated and bounded. Version 2
//!   adds control frames (HELLO, WELCOME, REFUSE, SERIES, ACK), a per-sender
//!   sequence number and series tags (`docs/wire-protocol.md`).
//! - [`cpu`]: the CPU time an endpoint used, printed at its exit.
//! - [`recording`]: recording files (`LOOMREC\0` header naming workload, phase
//!   and whether synthetic; zstd-compressed batch blocks with CRC32C).
//!
//! Every decoder of outside bytes returns a typed error and never panics; fuzz
//! targets live in `telemetry/fuzz/`.

pub mod batch;
pub mod cpu;
mod error;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod model;
pub mod raw;
pub mod record;
pub mod recording;
pub mod source;
pub mod wire;

pub use batch::Batch;
pub use error::{DecodeError, RecordingError, WireError};
pub use record::{
    AgentStat, BlockIo, BlockOp, Kind, KvOp, KvOpKind, Packet, PageCache, Record, RunQueue, Syscall,
};
pub use recording::{RecordingHeader, RecordingReader, RecordingWriter};
pub use source::SourceId;
pub use wire::{FrameReader, FrameWriter};
