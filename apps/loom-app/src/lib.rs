//! `loom-app`: the Loom telemetry endpoint, as a library: a [`Config`]
//! (every flag with its default) → [`App::start`] → a [`Running`] app
//! holding its bound addresses (`tcp`, `http`, `otlp_grpc`, `otlp_http`),
//! which [`Running::stop`] stops and [`Running::wait`] waits for, both
//! returning the [`Summary`] of the `Final` line. The binary (`main.rs`)
//! parses the flags, sets the stop flag on Ctrl-C and runs it.
//!
//! Listens on `--addr`; one receiving thread per connection feeds a bounded
//! queue; the single ingest thread owns the `loom::Writer`, declares each
//! source by its data-model schema on first sight, publishes to readers
//! every few ms and makes data durable every `--persist-interval-ms`. A full
//! queue drops batches (counted), never slowing senders. A query thread asks
//! the named questions (`--question`, none by default) from a
//! `loom::Reader`. The store (`--loom-path`, default the user's data
//! directory, see `store::default_dir`) is reopened and appended to and
//! never deleted; `--temp-store` gives experiments a fresh one deleted at
//! exit. `--tls-cert/--tls-key` make the TCP ingest port TLS only.
//!
//! Output (stable, parsed by `figures/`):
//! - every `--report-interval-s`: `Records received: r, dropped: d, total
//!   received R dropped D, not stored n, late m, late stored s, otlp ...`
//!   (`r`/`d`/`n`/`m`/`s` during the interval; received counts every record
//!   of a valid frame and every OTLP item, dropped the part discarded on a
//!   full queue, not stored what the engine refused, late stored the records
//!   older than their source's newest stored record stored at their own
//!   time in a late sibling, late those refused because no sibling could
//!   take them: a record's time is never moved); then `Memory: index held H bytes (...)`, the engine's
//!   index memory (`report::print_memory`);
//! - per query: its answer, then `Query Latency (<name>): <ms> ms`;
//! - with `--machine-output`, also `ANSWER query=<name> t0=<µs> t1=<µs> <key=value...>`;
//! - at exit: `Final: ...` summary, then (the binary) `Endpoint CPU: ...`
//!   (`telemetry::cpu_exit_line`);
//! - with `--ready-file PATH`, once every listener is bound, the bound
//!   addresses as JSON in PATH (written atomically), so callers can pass
//!   port 0 everywhere.
//!
//! The InfluxDB 1.x query API (`--http`, default 127.0.0.1:8186) answers
//! InfluxQL from reader threads while ingest goes on. OTLP receivers
//! (`--otlp-grpc`, default 127.0.0.1:4317; `--otlp-http`, default
//! 127.0.0.1:4318) take OpenTelemetry spans, logs and metrics into the same
//! store (see `otlp_ingest`); the progress line ends with their counts.

mod app;
mod cli;
mod counters;
mod exporting;
mod http;
mod ingest;
mod intake_log;
mod otlp_ingest;
mod queries;
mod receive;
mod reorder;
mod report;
mod running;
mod schedule;
mod source_state;
mod source_table;
mod sources;
mod store;
mod write;

pub use app::App;
/// Every setting of loom-app: the command line's flags (`Config::parse()`
/// from `clap::Parser`), or `Config::default()` changed in code.
pub use cli::Cli as Config;
pub use ingest::{IngestEnd, TimestampMode};
pub use otlp_ingest::AckMode;
pub use running::{Running, Summary};
