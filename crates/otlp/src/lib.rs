//! OTLP (OpenTelemetry protocol) export requests into Loom records.
//!
//! The network side (gRPC and HTTP servers) lives in `loom-app`; this crate
//! is what they share and what the fuzz target drives:
//!
//! - request bodies (protobuf or OTLP/JSON, optionally gzip or deflate) into
//!   the export request messages of `opentelemetry-proto`, size-bounded
//!   ([`decode`], [`gunzip`], [`inflate`]);
//! - each signal's items into records of the data model (`model.rs`: the
//!   span, log and metric layouts, [`schema`]) with per-item refusals counted
//!   for OTLP's partial-success response: [`convert_spans`],
//!   [`convert_logs`], [`convert_metrics`] into a [`Converted`], or
//!   [`decode_and_convert`] for a whole HTTP body;
//! - the [`Registry`]: series ids, the cardinality limit, one layout per
//!   measurement;
//! - attributes and other structured values as JSON text (`value.rs`).
//!
//! Modules are private; this list is the crate's API.
//!
//! Times are the items' own (ns since the epoch, stored as whole µs).

mod body;
mod convert;
mod error;
#[cfg(feature = "fuzz")]
pub mod fuzz;
mod logs;
mod metrics;
mod model;
mod registry;
mod spans;
#[cfg(test)]
mod testing;
mod value;

pub use body::{decode, gunzip, inflate, Encoding, Request};
pub use convert::{Config, Context, Converted, Shaped, UNKNOWN_SERVICE};
pub use error::{Error, Result};
pub use logs::convert as convert_logs;
pub use metrics::convert as convert_metrics;
pub use model::{schema, LOG_MEASUREMENT, RESERVED, SPAN_MEASUREMENT};
pub use registry::{Refusal, Registry};
pub use spans::convert as convert_spans;

/// The three OTLP signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Spans (`/v1/traces`, `TraceService/Export`).
    Traces,
    /// Log records (`/v1/logs`, `LogsService/Export`).
    Logs,
    /// Metric points (`/v1/metrics`, `MetricsService/Export`).
    Metrics,
}

impl Signal {
    /// What one item of the signal is called (for messages).
    pub fn item(self) -> &'static str {
        match self {
            Signal::Traces => "spans",
            Signal::Logs => "log records",
            Signal::Metrics => "data points",
        }
    }
}

/// Decodes a body of `signal` and converts it: the whole path of an
/// OTLP/HTTP request after its headers.
pub fn decode_and_convert(
    signal: Signal,
    body: &[u8],
    encoding: Encoding,
    ctx: &Context,
) -> Result<Converted> {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    Ok(match signal {
        Signal::Traces => spans::convert(
            &body::decode::<ExportTraceServiceRequest>(body, encoding)?,
            ctx,
        ),
        Signal::Logs => logs::convert(
            &body::decode::<ExportLogsServiceRequest>(body, encoding)?,
            ctx,
        ),
        Signal::Metrics => metrics::convert(
            &body::decode::<ExportMetricsServiceRequest>(body, encoding)?,
            ctx,
        ),
    })
}
