//! OTLP (OpenTelemetry protocol) export requests into Loom records.
//!
//! The network side (gRPC and HTTP servers) lives in `loom-app`; this crate
//! is what they share and what the fuzz target drives:
//!
//! - [`body`]: request bodies (protobuf or OTLP/JSON, optionally gzip) into
//!   the export request messages of `opentelemetry-proto`, size-bounded;
//! - [`spans`], [`logs`], [`metrics`]: each signal's items into records of
//!   the data model in [`model`], with per-item refusals counted for OTLP's
//!   partial-success response ([`convert::Converted`]);
//! - [`registry`]: series ids, the cardinality limit, one layout per
//!   measurement;
//! - [`value`]: attributes and other structured values as JSON text.
//!
//! Times are the items' own (ns since the epoch, stored as whole µs).

pub mod body;
pub mod convert;
pub mod error;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod logs;
pub mod metrics;
pub mod model;
pub mod registry;
pub mod spans;
#[cfg(test)]
mod testing;
pub mod value;

pub use body::Encoding;
pub use convert::{Config, Context, Converted, Shaped};
pub use error::{Error, Result};
pub use registry::{Refusal, Registry};

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
