//! The benchmark's spans: per client one service, four span names, start
//! times spread evenly over the data window, Pareto-tailed durations; and
//! brute force over them.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{status, ResourceSpans, ScopeSpans, Span, Status};
use replay::SplitMix64;

/// Span names of every service.
pub const NAMES: [&str; 4] = ["GET /cart", "POST /pay", "db.query", "cache.get"];

/// One span as the generator made it.
#[derive(Clone, Copy)]
pub struct Made {
    pub name: usize,
    pub duration_us: u64,
}

fn kv(k: &str, v: Any) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

/// Duration in µs: Pareto (α = 1.5) from 200 µs, at most 10 s; the p99.99
/// lands near 100 ms.
fn duration_us(rng: &mut SplitMix64) -> u64 {
    let u = rng.uniform();
    let d = 200.0 * (1.0 - u).max(1e-12).powf(-1.0 / 1.5);
    (d as u64).min(10_000_000)
}

/// The `client`'s service name.
pub fn service(client: usize) -> String {
    format!("svc-{client}")
}

/// The requests of one client: `n` spans over `[t0_ns, t0_ns + window_ns)`,
/// `batch` spans per request, and what was made.
pub fn client_requests(
    client: usize,
    n: usize,
    batch: usize,
    t0_ns: u64,
    window_ns: u64,
) -> (Vec<ExportTraceServiceRequest>, Vec<Made>) {
    let mut rng = SplitMix64::new(client as u64 + 1);
    let resource = Resource {
        attributes: vec![
            kv("service.name", Any::StringValue(service(client))),
            kv("service.version", Any::StringValue("1.4.2".into())),
            kv("host.name", Any::StringValue(format!("host-{client}"))),
            kv("telemetry.sdk.language", Any::StringValue("rust".into())),
            kv("telemetry.sdk.name", Any::StringValue("otlp-load".into())),
        ],
        ..Default::default()
    };
    let step = window_ns / n.max(1) as u64;
    let mut made = Vec::with_capacity(n);
    let mut requests = Vec::with_capacity(n.div_ceil(batch));
    let mut trace = rng.bytes(16);
    let mut root = rng.bytes(8);
    for chunk in (0..n).collect::<Vec<_>>().chunks(batch) {
        let spans: Vec<Span> = chunk
            .iter()
            .map(|&k| {
                let name = k % NAMES.len();
                let start = t0_ns + k as u64 * step;
                let d = duration_us(&mut rng);
                let error = rng.next_u64().is_multiple_of(100);
                let span_id = rng.bytes(8);
                let parent = if name == 0 {
                    trace = rng.bytes(16);
                    root = span_id.clone();
                    Vec::new()
                } else {
                    root.clone()
                };
                made.push(Made {
                    name,
                    duration_us: d,
                });
                Span {
                    trace_id: trace.clone(),
                    span_id,
                    parent_span_id: parent,
                    name: NAMES[name].into(),
                    kind: if name < 2 { 2 } else { 3 },
                    start_time_unix_nano: start,
                    end_time_unix_nano: start + d * 1000 + rng.next_u64() % 1000,
                    attributes: vec![
                        kv(
                            "http.method",
                            Any::StringValue(if name == 1 { "POST" } else { "GET" }.into()),
                        ),
                        kv("http.route", Any::StringValue(NAMES[name].into())),
                        kv(
                            "http.status_code",
                            Any::IntValue(if error { 500 } else { 200 }),
                        ),
                        kv("net.peer.port", Any::IntValue(443)),
                    ],
                    status: Some(Status {
                        message: if error {
                            "internal error".into()
                        } else {
                            String::new()
                        },
                        code: if error {
                            status::StatusCode::Error as i32
                        } else {
                            status::StatusCode::Unset as i32
                        },
                    }),
                    ..Default::default()
                }
            })
            .collect();
        requests.push(ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(resource.clone()),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "otlp-load".into(),
                        version: "0.1".into(),
                        ..Default::default()
                    }),
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        });
    }
    (requests, made)
}

/// InfluxDB 1.x `percentile`: nearest rank `floor(n·p/100 + 0.5)`.
pub fn percentile(values: &mut [u64], p: f64) -> Option<u64> {
    values.sort_unstable();
    let k = ((values.len() as f64) * p / 100.0 + 0.5).floor() as usize;
    (k > 0).then(|| values[k - 1])
}
