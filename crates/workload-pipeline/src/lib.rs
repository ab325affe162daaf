//! The telemetry path shared by the live workloads (`rocksdb-workload`,
//! `valkey-workload`): application threads fill [`RecordBuffer`]s, the probe
//! consumer fills its own channel, one sender thread ([`run_sender`]) turns
//! both into batches for a [`Destination`] (noop, TCP, raw frames to a file,
//! recording). Workers never block on telemetry: a full channel drops the
//! batch and counts it in [`Counters`].
//!
//! Times are CLOCK_MONOTONIC (the probes' clock), in µs since the run's
//! [`Epoch`].

mod clock;
mod destination;
mod error;
mod pipeline;
mod progress;
mod sink;

pub use clock::{gettid, monotonic_ns, Epoch};
pub use destination::{Alternative, Destination};
pub use error::PipelineError;
pub use pipeline::{probe_record, run_sender, Counters, RecordBuffer};
pub use progress::Progress;
pub use sink::{open as open_sink, Sink};
