//! The same spans as InfluxDB line protocol, written through influx-app's
//! HTTP client (`/write`, precision ns) with one writer per client, as
//! influx-app writes: fixed-size bodies, retried on failure.

use std::time::{Duration, Instant};

use influx_app::client::Client;
use influxdb_line_protocol::builder::LineProtocolBuilder;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

use crate::loom::Sent;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Line-protocol bodies of `points` points each: measurement `span`, tags
/// `service` and `name`, the fields loom-app stores (attributes and
/// resource as the same JSON text), time in ns.
pub fn bodies(requests: &[ExportTraceServiceRequest], points: usize) -> Vec<(bytes::Bytes, u64)> {
    let mut out = Vec::new();
    let mut body = Vec::new();
    let mut n = 0u64;
    let registry = otlp::Registry::new(usize::MAX, []);
    let config = otlp::Config::default();
    let ctx = otlp::Context {
        registry: &registry,
        config: &config,
        arrival_us: 0,
    };
    for req in requests {
        // The JSON text loom-app stores, from the same conversion.
        let converted = otlp::convert_spans(req, &ctx);
        let spans = req
            .resource_spans
            .iter()
            .flat_map(|r| r.scope_spans.iter().flat_map(|s| s.spans.iter()));
        for (span, rec) in spans.zip(&converted.records) {
            let schema = registry.schema(rec.source).expect("admitted series");
            let text = |f: &str| {
                schema
                    .field(f)
                    .and_then(|d| d.read_str(&rec.bytes))
                    .unwrap_or_default()
                    .to_string()
            };
            let num = |f: &str| match schema.field(f).and_then(|d| d.read(&rec.bytes)) {
                Some(loom::Value::Unsigned(v)) => v as i64,
                _ => 0,
            };
            LineProtocolBuilder::new_with(&mut body)
                .measurement("span")
                .tag("name", &span.name)
                .tag("service", schema.tag("service").unwrap_or_default())
                .field("duration_us", num("duration_us"))
                .field("status", num("status"))
                .field("kind", num("kind"))
                .field("trace_id", hex(&span.trace_id).as_str())
                .field("span_id", hex(&span.span_id).as_str())
                .field("parent_span_id", hex(&span.parent_span_id).as_str())
                .field("status_message", text("status_message").as_str())
                .field("scope", text("scope").as_str())
                .field("attributes", text("attributes").as_str())
                .field("resource", text("resource").as_str())
                .field("events", text("events").as_str())
                .field("links", text("links").as_str())
                .timestamp(span.start_time_unix_nano as i64)
                .close_line();
            n += 1;
            if n as usize == points {
                out.push((bytes::Bytes::from(std::mem::take(&mut body)), n));
                n = 0;
            }
        }
    }
    if n > 0 {
        out.push((bytes::Bytes::from(body), n));
    }
    out
}

/// Writes `bodies` in order through one client; failed writes are retried.
pub async fn send(client: Client, bodies: Vec<(bytes::Bytes, u64)>) -> Result<Sent, String> {
    let mut out = Sent::default();
    let start = Instant::now();
    for (body, n) in bodies {
        let sent_at = Instant::now();
        loop {
            match client.write(body.clone(), n).await {
                Ok(()) => {
                    out.spans += n;
                    out.ack_us.push(sent_at.elapsed().as_micros() as u64);
                    break;
                }
                Err(e) => {
                    out.retries += 1;
                    if out.retries > 1000 {
                        return Err(format!("influxd keeps failing: {e}"));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}
