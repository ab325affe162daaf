//! `otlp_decode` inputs: export requests of all three signals built with
//! `opentelemetry-proto`'s types, encoded as protobuf (prost) or OTLP/JSON
//! (the crate's serde), some gzip-compressed, behind the header byte that
//! `otlp::fuzz` reads.

use std::io::Write;

use anyhow::{Context, Result};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::exponential_histogram_data_point::Buckets;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::metrics::v1::summary_data_point::ValueAtQuantile;
use opentelemetry_proto::tonic::metrics::v1::{
    ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, Summary, SummaryDataPoint,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, Link};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use otlp::{Encoding, Signal};
use prost::Message;

use replay::SplitMix64;

fn text(rng: &mut SplitMix64) -> String {
    const WORDS: [&str; 8] = ["GET /a", "db", "é\"q\\", "", "x", "kv", "service", "value"];
    WORDS[rng.index(WORDS.len())].repeat(1 + rng.index(3))
}

fn any(rng: &mut SplitMix64, depth: usize) -> AnyValue {
    let v = match rng.index(if depth > 2 { 5 } else { 7 }) {
        0 => Any::StringValue(text(rng)),
        1 => Any::BoolValue(rng.one_in(2)),
        2 => Any::IntValue(rng.next_u64() as i64),
        3 => Any::DoubleValue(f64::from_bits(rng.next_u64())),
        4 => {
            let n = rng.index(8);
            Any::BytesValue(rng.bytes(n))
        }
        5 => Any::ArrayValue(ArrayValue {
            values: (0..rng.index(4)).map(|_| any(rng, depth + 1)).collect(),
        }),
        _ => Any::KvlistValue(KeyValueList {
            values: attrs(rng, depth + 1),
        }),
    };
    AnyValue { value: Some(v) }
}

fn attrs(rng: &mut SplitMix64, depth: usize) -> Vec<KeyValue> {
    (0..rng.index(5))
        .map(|_| KeyValue {
            key: text(rng),
            value: Some(any(rng, depth)),
            ..Default::default()
        })
        .collect()
}

fn resource(rng: &mut SplitMix64) -> Option<Resource> {
    let mut a = attrs(rng, 0);
    if !rng.one_in(4) {
        a.push(KeyValue {
            key: "service.name".into(),
            value: Some(AnyValue {
                value: Some(Any::StringValue(text(rng))),
            }),
            ..Default::default()
        });
    }
    Some(Resource {
        attributes: a,
        ..Default::default()
    })
}

fn scope(rng: &mut SplitMix64) -> Option<InstrumentationScope> {
    Some(InstrumentationScope {
        name: text(rng),
        ..Default::default()
    })
}

fn time(rng: &mut SplitMix64) -> u64 {
    if rng.one_in(8) {
        0
    } else {
        1_700_000_000_000_000_000 + rng.next_u64() % 1_000_000_000_000
    }
}

fn traces(rng: &mut SplitMix64) -> ExportTraceServiceRequest {
    let span = |rng: &mut SplitMix64| {
        let start = time(rng);
        let parent = rng.index(2) * 8;
        Span {
            trace_id: rng.bytes(16),
            span_id: rng.bytes(8),
            parent_span_id: rng.bytes(parent),
            name: text(rng),
            kind: rng.index(7) as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: start.wrapping_add(rng.next_u64() % 10_000_000_000),
            attributes: attrs(rng, 0),
            events: (0..rng.index(3))
                .map(|_| Event {
                    time_unix_nano: time(rng),
                    name: text(rng),
                    attributes: attrs(rng, 0),
                    ..Default::default()
                })
                .collect(),
            links: (0..rng.index(2))
                .map(|_| Link {
                    trace_id: rng.bytes(16),
                    span_id: rng.bytes(8),
                    attributes: attrs(rng, 0),
                    ..Default::default()
                })
                .collect(),
            status: Some(Status {
                message: text(rng),
                code: rng.index(4) as i32,
            }),
            ..Default::default()
        }
    };
    ExportTraceServiceRequest {
        resource_spans: (0..1 + rng.index(2))
            .map(|_| ResourceSpans {
                resource: resource(rng),
                scope_spans: vec![ScopeSpans {
                    scope: scope(rng),
                    spans: (0..rng.index(8)).map(|_| span(rng)).collect(),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
    }
}

fn logs(rng: &mut SplitMix64) -> ExportLogsServiceRequest {
    let record = |rng: &mut SplitMix64| LogRecord {
        time_unix_nano: time(rng),
        observed_time_unix_nano: time(rng),
        severity_number: rng.index(26) as i32,
        severity_text: if rng.one_in(2) {
            text(rng)
        } else {
            String::new()
        },
        body: Some(any(rng, 0)),
        attributes: attrs(rng, 0),
        flags: rng.next_u64() as u32,
        trace_id: rng.bytes(16),
        span_id: rng.bytes(8),
        event_name: text(rng),
        ..Default::default()
    };
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: resource(rng),
            scope_logs: vec![ScopeLogs {
                scope: scope(rng),
                log_records: (0..rng.index(8)).map(|_| record(rng)).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn metrics(rng: &mut SplitMix64) -> ExportMetricsServiceRequest {
    let number = |rng: &mut SplitMix64| NumberDataPoint {
        attributes: attrs(rng, 0),
        start_time_unix_nano: time(rng),
        time_unix_nano: time(rng),
        value: Some(if rng.one_in(2) {
            Number::AsInt(rng.next_u64() as i64)
        } else {
            Number::AsDouble(f64::from_bits(rng.next_u64()))
        }),
        ..Default::default()
    };
    let metric = |rng: &mut SplitMix64| {
        let data = match rng.index(5) {
            0 => Data::Gauge(Gauge {
                data_points: (0..rng.index(4)).map(|_| number(rng)).collect(),
            }),
            1 => Data::Sum(Sum {
                data_points: (0..rng.index(4)).map(|_| number(rng)).collect(),
                aggregation_temporality: rng.index(3) as i32,
                is_monotonic: rng.one_in(2),
            }),
            2 => Data::Histogram(Histogram {
                data_points: (0..rng.index(3))
                    .map(|_| HistogramDataPoint {
                        attributes: attrs(rng, 0),
                        time_unix_nano: time(rng),
                        count: rng.next_u64() % 100,
                        sum: rng.one_in(2).then_some(1.5),
                        bucket_counts: vec![1, 2, 3],
                        explicit_bounds: vec![0.5, f64::INFINITY],
                        min: rng.one_in(2).then_some(-1.0),
                        ..Default::default()
                    })
                    .collect(),
                aggregation_temporality: 2,
            }),
            3 => Data::ExponentialHistogram(ExponentialHistogram {
                data_points: vec![ExponentialHistogramDataPoint {
                    time_unix_nano: time(rng),
                    count: 3,
                    scale: rng.index(20) as i32 - 10,
                    positive: Some(Buckets {
                        offset: -2,
                        bucket_counts: vec![1, 2],
                    }),
                    ..Default::default()
                }],
                aggregation_temporality: 1,
            }),
            _ => Data::Summary(Summary {
                data_points: vec![SummaryDataPoint {
                    time_unix_nano: time(rng),
                    count: 4,
                    sum: f64::NAN,
                    quantile_values: vec![ValueAtQuantile {
                        quantile: 0.99,
                        value: 12.0,
                    }],
                    ..Default::default()
                }],
            }),
        };
        Metric {
            name: text(rng),
            unit: text(rng),
            data: Some(data),
            ..Default::default()
        }
    };
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: resource(rng),
            scope_metrics: vec![ScopeMetrics {
                scope: scope(rng),
                metrics: (0..rng.index(5)).map(|_| metric(rng)).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn encode<M: Message + serde::Serialize>(m: &M, encoding: Encoding) -> Result<Vec<u8>> {
    Ok(match encoding {
        Encoding::Protobuf => m.encode_to_vec(),
        Encoding::Json => serde_json::to_vec(m).context("OTLP/JSON of a sample")?,
    })
}

/// `n` inputs: header byte, then a (maybe gzip) body.
pub fn inputs(rng: &mut SplitMix64, n: usize) -> Result<Vec<Vec<u8>>> {
    (0..n)
        .map(|_| {
            let signal = [Signal::Traces, Signal::Logs, Signal::Metrics][rng.index(3)];
            let encoding = if rng.one_in(2) {
                Encoding::Json
            } else {
                Encoding::Protobuf
            };
            let body = match signal {
                Signal::Traces => encode(&traces(rng), encoding)?,
                Signal::Logs => encode(&logs(rng), encoding)?,
                Signal::Metrics => encode(&metrics(rng), encoding)?,
            };
            let gzip = rng.one_in(6);
            let mut out = vec![otlp::fuzz::header(signal, encoding, gzip)];
            if gzip {
                let mut z = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
                z.write_all(&body).context("gzip")?;
                out = z.finish().context("gzip")?;
            } else {
                out.extend_from_slice(&body);
            }
            Ok(out)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The samples reach the converters: most decode and yield records.
    #[test]
    fn samples_decode_into_records() {
        let mut rng = SplitMix64::new(5);
        let registry = otlp::Registry::new(1000, []);
        let config = otlp::Config::default();
        let ctx = otlp::Context {
            registry: &registry,
            config: &config,
            arrival_us: 1,
        };
        let (mut decoded, mut records) = (0, 0);
        let inputs = inputs(&mut rng, 200).expect("samples");
        for input in &inputs {
            let h = input[0];
            let body = if h & 8 != 0 {
                otlp::gunzip(&input[1..], 1 << 24).expect("gzip sample")
            } else {
                input[1..].to_vec()
            };
            let signal = [Signal::Traces, Signal::Logs, Signal::Metrics][usize::from(h & 3)];
            let encoding = if h & 4 == 0 {
                Encoding::Protobuf
            } else {
                Encoding::Json
            };
            if let Ok(c) = otlp::decode_and_convert(signal, &body, encoding, &ctx) {
                decoded += 1;
                records += c.records.len();
            }
        }
        assert!(
            decoded * 10 >= inputs.len() * 9,
            "{decoded} of {} decode",
            inputs.len()
        );
        assert!(records > inputs.len(), "{records} records");
    }
}
