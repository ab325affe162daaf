//! What the live workloads (`rocksdb-workload`, `valkey-workload`) share.
//!
//! - The run ([`run`]): application threads, warmup without telemetry, then
//!   telemetry (sender thread, probes) and one [`Progress`] per measured
//!   second, then stop and drain. A workload says what differs — its
//!   threads, its probes, its recording header — by implementing
//!   [`Workload`].
//! - The telemetry path: application threads fill [`RecordBuffer`]s, the
//!   probe consumer fills its own channel, one sender thread ([`run_sender`])
//!   turns both into batches for a [`Destination`] (noop, TCP, raw frames to
//!   a file, recording). Threads never block on telemetry: a full channel
//!   drops the batch and counts it in [`Counters`].
//! - The binaries' common flags and summary lines ([`cli`]).
//!
//! Times are CLOCK_MONOTONIC (the probes' clock), in µs since the run's
//! [`Epoch`].

pub mod cli;
mod clock;
mod destination;
mod driver;
mod error;
mod pipeline;
mod progress;
mod sink;
mod summary;

pub use clock::{gettid, monotonic_ns, Epoch};
pub use destination::{Alternative, Destination};
pub use driver::{run, Report, RunSettings, Shared, WorkerFn, Workload};
pub use error::{PipelineError, RunError};
pub use pipeline::{probe_record, run_sender, Counters, RecordBuffer};
pub use progress::Progress;
pub use sink::{open as open_sink, Sink};
pub use summary::Summary;
