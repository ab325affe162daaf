//! Telemetry records shared by every Loom app: record kinds and their compact
//! encodings, stable source ids, batches, the TCP wire frame format and the
//! recording file format.
//!
//! - [`Record`] and its kinds: [`KvOp`] (24 B), [`Syscall`] (28 B),
//!   [`PageCache`] (44 B), [`Packet`] (48 B), [`BlockIo`] (44 B) and
//!   [`RunQueue`] (28 B); fixed little-endian encodings that are stored as-is
//!   in the engine; index-value extractors `fn(&[u8]) -> u64` (never panic, 0
//!   on short input).
//! - [`model`]: the data model (measurement, tags, fields at byte offsets,
//!   range index) of every source, shared by the endpoints and InfluxQL.
//! - [`source`]: source id = FNV-1a 64 of a tag such as `kv/read` or `syscall/17`.
//! - [`raw`]: validating a payload and reading its records' kind, source key
//!   and event time in place, for endpoints that store the wire bytes as-is.
//! - [`Batch`]: an arrival time (µs) plus records; its payload is the
//!   records back to back, each a kind tag byte then its encoding
//!   ([`decode_payload`]).
//! - [`wire`]: TCP framing (`LMTF` magic, version, record count, payload length,
//!   arrival time, CRC32C); every frame is validated and bounded. Version 2
//!   adds control frames (HELLO, WELCOME, REFUSE, SERIES, ACK), a per-sender
//!   sequence number and series tags (`docs/wire-protocol.md`).
//! - [`CpuUsage`]: the CPU time an endpoint used, printed at its exit
//!   ([`cpu_exit_line`]).
//! - recording files ([`RecordingWriter`], [`RecordingReader`]: a
//!   `LOOMREC\0` header naming workload, phase and whether synthetic;
//!   zstd-compressed batch blocks with CRC32C).
//!
//! `wire`, `raw`, `model` and `source` are public namespaces (the protocol,
//! in-place payload access, the data model, source ids); every other module
//! is private and this list is its API.
//!
//! Every decoder of outside bytes returns a typed error and never panics; fuzz
//! targets live in `telemetry/fuzz/`.

mod batch;
mod cpu;
mod error;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod model;
pub mod raw;
mod record;
mod recording;
pub mod source;
pub mod wire;

pub use batch::{decode_payload, Batch};
pub use cpu::{exit_line as cpu_exit_line, CpuUsage};
pub use error::{DecodeError, RecordingError, WireError};
pub use record::agent_names;
pub use record::{
    AgentStat, BlockIo, BlockOp, Kind, KvOp, KvOpKind, Packet, PageCache, Record, RunQueue, Syscall,
};
pub use recording::{
    RecordingHeader, RecordingReader, RecordingWriter, BATCH_MAGIC, RECORDING_MAGIC,
};
pub use source::SourceId;
