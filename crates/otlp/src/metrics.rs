//! Metric points into records: the measurement is the metric's name; the
//! tags are `service`, `unit` (when the metric has one) and a bounded set
//! of the point's attributes; the layout follows the metric's type
//! ([`crate::model::NUMBER`], [`crate::model::HISTOGRAM`],
//! [`crate::model::SUMMARY`]). Points are stored at their own time.
//!
//! Which attributes become tags: scalar ones (string, bool, integer,
//! double) whose key and text fit the tag limit and name no field or other
//! tag, the first `max_metric_tags` of them by key. Every other attribute
//! is kept in the `attributes` JSON field, so nothing is lost.

use std::borrow::Cow;

use loom::{field_offset, FieldDef, RecordBuilder};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as NumberValue;
use opentelemetry_proto::tonic::metrics::v1::{ExponentialHistogramDataPoint, SummaryDataPoint};

use crate::convert::{push, us, Context, Converted, UNKNOWN_SERVICE};
use crate::model::{fixed_len, HISTOGRAM, NUMBER, RESERVED, SUMMARY};
use crate::value::{json_attrs, json_f64, str_attr, tag_text};

/// Names a point attribute cannot take as a tag key: the fields of every
/// metric layout, `time`, and the tags this module sets itself.
fn is_reserved_key(k: &str) -> bool {
    k == "time"
        || k == "service"
        || k == "unit"
        || [NUMBER, HISTOGRAM, SUMMARY]
            .iter()
            .any(|l| l.iter().any(|f| f.name == k))
}

/// A metric layout and where the fields every layout has sit in it,
/// resolved at compile time.
struct Layout {
    fields: &'static [FieldDef],
    attributes: u32,
    resource: u32,
    scope: u32,
}

const NUMBER_LAYOUT: Layout = Layout {
    fields: NUMBER,
    attributes: field_offset!(NUMBER, "attributes"),
    resource: field_offset!(NUMBER, "resource"),
    scope: field_offset!(NUMBER, "scope"),
};

const HISTOGRAM_LAYOUT: Layout = Layout {
    fields: HISTOGRAM,
    attributes: field_offset!(HISTOGRAM, "attributes"),
    resource: field_offset!(HISTOGRAM, "resource"),
    scope: field_offset!(HISTOGRAM, "scope"),
};

const SUMMARY_LAYOUT: Layout = Layout {
    fields: SUMMARY,
    attributes: field_offset!(SUMMARY, "attributes"),
    resource: field_offset!(SUMMARY, "resource"),
    scope: field_offset!(SUMMARY, "scope"),
};

/// What is common to the points of one metric.
struct Metric<'a> {
    name: &'a str,
    service: &'a str,
    unit: &'a str,
    resource: &'a [u8],
    scope: &'a str,
}

/// The tags of one point; `kept` says which attributes became tags.
fn tags<'a>(
    m: &Metric<'a>,
    attrs: &'a [KeyValue],
    ctx: &Context,
) -> (Vec<(&'a str, Cow<'a, str>)>, Vec<bool>) {
    let max = ctx.config.max_tag_bytes;
    let mut candidates: Vec<(usize, &str, Cow<str>)> = attrs
        .iter()
        .enumerate()
        .filter(|(i, kv)| {
            !kv.key.is_empty()
                && kv.key.len() <= max
                && !is_reserved_key(&kv.key)
                && !attrs[..*i].iter().any(|p| p.key == kv.key)
        })
        .filter_map(|(i, kv)| {
            tag_text(kv.value.as_ref())
                .filter(|t| t.len() <= max)
                .map(|t| (i, kv.key.as_str(), t))
        })
        .collect();
    candidates.sort_by(|a, b| a.1.cmp(b.1));
    candidates.truncate(ctx.config.max_metric_tags);
    let mut kept = vec![false; attrs.len()];
    let mut out: Vec<(&str, Cow<str>)> = Vec::with_capacity(candidates.len() + 2);
    for (i, k, v) in candidates {
        kept[i] = true;
        out.push((k, v));
    }
    out.push(("service", Cow::Borrowed(m.service)));
    if !m.unit.is_empty() {
        out.push(("unit", Cow::Borrowed(m.unit)));
    }
    out.sort_by(|a, b| a.0.cmp(b.0));
    (out, kept)
}

/// One point's common part: writes the attributes, resource and scope and
/// pushes the record.
#[allow(clippy::too_many_arguments)]
fn finish(
    ctx: &Context,
    out: &mut Converted,
    m: &Metric,
    layout: &Layout,
    b: &mut RecordBuilder,
    attrs: &[KeyValue],
    time_ns: u64,
) {
    if time_ns == 0 {
        out.reject(format!("a point of metric {:?} has no time", m.name));
        return;
    }
    let (tags, kept) = tags(m, attrs, ctx);
    b.str_with(layout.attributes, |o| {
        json_attrs(o, attrs, |i, _| kept.get(i).copied().unwrap_or(false))
    });
    b.str_with(layout.resource, |o| o.extend_from_slice(m.resource));
    b.str(layout.scope, m.scope);
    let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (*k, v.as_ref())).collect();
    push(
        ctx,
        out,
        m.name,
        &tags,
        layout.fields,
        false,
        us(time_ns),
        b,
    );
}

/// Converts every data point of the request; points without a time, of a
/// metric with a reserved or over-long name, of a refused series or too
/// large are counted as rejected with the reason.
pub fn convert(req: &ExportMetricsServiceRequest, ctx: &Context) -> Converted {
    let mut out = Converted::default();
    let mut b = RecordBuilder::new();
    for rm in &req.resource_metrics {
        let res = rm.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let service = str_attr(res, "service.name").unwrap_or(UNKNOWN_SERVICE);
        let mut resource = Vec::new();
        json_attrs(&mut resource, res, |_, _| false);
        for sm in &rm.scope_metrics {
            let scope = sm.scope.as_ref().map_or("", |s| s.name.as_str());
            for metric in &sm.metrics {
                let m = Metric {
                    name: &metric.name,
                    service,
                    unit: &metric.unit,
                    resource: &resource,
                    scope,
                };
                if let Some(why) = refusal(&m, ctx.config.max_tag_bytes) {
                    out.reject_n(points(metric.data.as_ref()), why);
                    continue;
                }
                if let Some(data) = &metric.data {
                    convert_points(ctx, &mut out, &m, data, &mut b);
                }
            }
        }
    }
    out
}

/// Why every point of metric `m` is refused, if it is: no name, a reserved
/// name, or a name, unit or service longer than a tag value may be.
fn refusal(m: &Metric, max_tag: usize) -> Option<String> {
    if m.name.is_empty() {
        Some("a metric without a name".to_string())
    } else if RESERVED.contains(&m.name) {
        Some(format!(
            "metric name {:?} is reserved for other data (Loom's telemetry or another OTLP signal)",
            m.name
        ))
    } else if [m.name.len(), m.service.len(), m.unit.len()]
        .iter()
        .any(|&l| l > max_tag)
    {
        Some(format!(
            "metric name, unit or service.name longer than {max_tag} bytes (the tag value limit)"
        ))
    } else {
        None
    }
}

/// Converts the data points of one metric, by its kind.
fn convert_points(
    ctx: &Context,
    out: &mut Converted,
    m: &Metric,
    data: &Data,
    b: &mut RecordBuilder,
) {
    let mut push_point =
        |b: &mut RecordBuilder, layout: &Layout, attrs: &[KeyValue], time_ns: u64| {
            finish(ctx, out, m, layout, b, attrs, time_ns);
        };
    match data {
        Data::Gauge(g) => {
            for p in &g.data_points {
                number(b, p, 0, false);
                push_point(b, &NUMBER_LAYOUT, &p.attributes, p.time_unix_nano);
            }
        }
        Data::Sum(s) => {
            for p in &s.data_points {
                number(b, p, s.aggregation_temporality, s.is_monotonic);
                push_point(b, &NUMBER_LAYOUT, &p.attributes, p.time_unix_nano);
            }
        }
        Data::Histogram(h) => {
            for p in &h.data_points {
                let t = h.aggregation_temporality;
                histogram_head(b, p.count, p.sum, p.min, p.max, p.start_time_unix_nano, t);
                b.str_with(field_offset!(HISTOGRAM, "buckets"), |o| {
                    o.extend_from_slice(b"{\"bounds\":");
                    f64_list(o, &p.explicit_bounds);
                    o.extend_from_slice(b",\"counts\":");
                    u64_list(o, &p.bucket_counts);
                    o.push(b'}');
                });
                push_point(b, &HISTOGRAM_LAYOUT, &p.attributes, p.time_unix_nano);
            }
        }
        Data::ExponentialHistogram(h) => {
            for p in &h.data_points {
                let t = h.aggregation_temporality;
                histogram_head(b, p.count, p.sum, p.min, p.max, p.start_time_unix_nano, t);
                b.str_with(field_offset!(HISTOGRAM, "buckets"), |o| {
                    exponential_buckets(o, p)
                });
                push_point(b, &HISTOGRAM_LAYOUT, &p.attributes, p.time_unix_nano);
            }
        }
        Data::Summary(s) => {
            for p in &s.data_points {
                summary(b, p);
                push_point(b, &SUMMARY_LAYOUT, &p.attributes, p.time_unix_nano);
            }
        }
    }
}

/// An exponential histogram's buckets as JSON: scale, zero bucket, and the
/// positive and negative ranges (offset and counts).
fn exponential_buckets(o: &mut Vec<u8>, p: &ExponentialHistogramDataPoint) {
    o.extend_from_slice(
        format!(
            "{{\"scale\":{},\"zero_count\":{},\"zero_threshold\":",
            p.scale, p.zero_count
        )
        .as_bytes(),
    );
    json_f64(o, p.zero_threshold);
    for (name, side) in [("positive", &p.positive), ("negative", &p.negative)] {
        let (off, counts) = side
            .as_ref()
            .map_or((0, &[][..]), |s| (s.offset, &s.bucket_counts[..]));
        o.extend_from_slice(format!(",\"{name}\":{{\"offset\":{off},\"counts\":").as_bytes());
        u64_list(o, counts);
        o.push(b'}');
    }
    o.push(b'}');
}

/// A summary point's fields: count, sum, start, and the quantiles as JSON
/// `[[quantile, value], …]`.
fn summary(b: &mut RecordBuilder, p: &SummaryDataPoint) {
    b.start(fixed_len(SUMMARY));
    b.u64(field_offset!(SUMMARY, "count"), p.count);
    b.f64(field_offset!(SUMMARY, "sum"), p.sum);
    b.u64(
        field_offset!(SUMMARY, "start_us"),
        us(p.start_time_unix_nano),
    );
    b.str_with(field_offset!(SUMMARY, "quantiles"), |o| {
        o.push(b'[');
        for (i, q) in p.quantile_values.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            o.push(b'[');
            json_f64(o, q.quantile);
            o.push(b',');
            json_f64(o, q.value);
            o.push(b']');
        }
        o.push(b']');
    });
}

fn points(d: Option<&Data>) -> u64 {
    (match d {
        None => 0,
        Some(Data::Gauge(g)) => g.data_points.len(),
        Some(Data::Sum(s)) => s.data_points.len(),
        Some(Data::Histogram(h)) => h.data_points.len(),
        Some(Data::ExponentialHistogram(h)) => h.data_points.len(),
        Some(Data::Summary(s)) => s.data_points.len(),
    }) as u64
}

fn number(
    b: &mut RecordBuilder,
    p: &opentelemetry_proto::tonic::metrics::v1::NumberDataPoint,
    temporality: i32,
    monotonic: bool,
) {
    b.start(fixed_len(NUMBER));
    let v = match p.value {
        Some(NumberValue::AsDouble(d)) => d,
        Some(NumberValue::AsInt(i)) => i as f64,
        None => f64::NAN,
    };
    b.f64(field_offset!(NUMBER, "value"), v);
    b.u64(
        field_offset!(NUMBER, "start_us"),
        us(p.start_time_unix_nano),
    );
    b.u8(
        field_offset!(NUMBER, "temporality"),
        temporality.clamp(0, 255) as u8,
    );
    b.u8(field_offset!(NUMBER, "monotonic"), u8::from(monotonic));
}

fn histogram_head(
    b: &mut RecordBuilder,
    count: u64,
    sum: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    start_ns: u64,
    temporality: i32,
) {
    b.start(fixed_len(HISTOGRAM));
    b.u64(field_offset!(HISTOGRAM, "count"), count);
    b.f64(field_offset!(HISTOGRAM, "sum"), sum.unwrap_or(f64::NAN));
    b.f64(field_offset!(HISTOGRAM, "min"), min.unwrap_or(f64::NAN));
    b.f64(field_offset!(HISTOGRAM, "max"), max.unwrap_or(f64::NAN));
    b.u64(field_offset!(HISTOGRAM, "start_us"), us(start_ns));
    b.u8(
        field_offset!(HISTOGRAM, "temporality"),
        temporality.clamp(0, 255) as u8,
    );
}

fn f64_list(o: &mut Vec<u8>, v: &[f64]) {
    o.push(b'[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            o.push(b',');
        }
        json_f64(o, *x);
    }
    o.push(b']');
}

fn u64_list(o: &mut Vec<u8>, v: &[u64]) {
    o.push(b'[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            o.push(b',');
        }
        o.extend_from_slice(x.to_string().as_bytes());
    }
    o.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::Config;
    use crate::registry::Registry;
    use crate::testing::{kv, kv_str, read, resource};
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use opentelemetry_proto::tonic::metrics::v1::{
        Gauge, Histogram, HistogramDataPoint, Metric as PMetric, NumberDataPoint, ResourceMetrics,
        ScopeMetrics,
    };

    fn request(metrics: Vec<PMetric>) -> ExportMetricsServiceRequest {
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(resource("api")),
                scope_metrics: vec![ScopeMetrics {
                    metrics,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn points_take_bounded_tags_and_keep_the_rest() {
        let reg = Registry::new(100, []);
        let config = Config {
            max_metric_tags: 2,
            ..Config::default()
        };
        let ctx = Context {
            registry: &reg,
            config: &config,
            arrival_us: 0,
        };
        let attrs = vec![
            kv_str("zone", "z1"),
            kv_str("host", "h1"),
            kv("code", Value::IntValue(200)),
            kv_str("value", "clash"),
            kv_str("long", &"x".repeat(300)),
        ];
        let gauge = PMetric {
            name: "cpu".into(),
            unit: "%".into(),
            data: Some(Data::Gauge(Gauge {
                data_points: vec![NumberDataPoint {
                    attributes: attrs.clone(),
                    time_unix_nano: 7_000,
                    value: Some(NumberValue::AsInt(42)),
                    ..Default::default()
                }],
            })),
            ..Default::default()
        };
        let hist = PMetric {
            name: "latency".into(),
            data: Some(Data::Histogram(Histogram {
                data_points: vec![HistogramDataPoint {
                    time_unix_nano: 8_000,
                    count: 3,
                    sum: Some(1.5),
                    bucket_counts: vec![1, 2],
                    explicit_bounds: vec![0.5],
                    ..Default::default()
                }],
                aggregation_temporality: 2,
            })),
            ..Default::default()
        };
        let kv_metric = PMetric {
            name: "kv".into(),
            data: gauge.data.clone(),
            ..Default::default()
        };
        let out = convert(&request(vec![gauge, hist, kv_metric]), &ctx);
        assert_eq!(out.rejected, 1);
        assert!(
            out.message().contains("\"kv\" is reserved"),
            "{}",
            out.message()
        );
        let r = &out.records[0];
        let s = reg.schema(r.source).expect("admitted");
        // The first two scalar attributes by key become tags.
        assert_eq!(
            s.tags,
            vec![
                ("code".to_string(), "200".to_string()),
                ("host".into(), "h1".into()),
                ("service".into(), "api".into()),
                ("unit".into(), "%".into()),
            ]
        );
        assert_eq!(r.time_us, 7);
        assert_eq!(read(&s, "value", &r.bytes), "42.0");
        let rest: serde_json::Value =
            serde_json::from_str(&read(&s, "attributes", &r.bytes)).expect("json");
        assert_eq!(
            rest,
            serde_json::json!({"zone": "z1", "value": "clash", "long": "x".repeat(300)})
        );
        let h = &out.records[1];
        let s = reg.schema(h.source).expect("admitted");
        assert_eq!(s.measurement, "latency");
        assert_eq!(read(&s, "count", &h.bytes), "3");
        assert_eq!(read(&s, "sum", &h.bytes), "1.5");
        assert_eq!(read(&s, "min", &h.bytes), "NaN");
        assert_eq!(read(&s, "temporality", &h.bytes), "2");
        assert_eq!(
            read(&s, "buckets", &h.bytes),
            r#"{"bounds":[0.5],"counts":[1,2]}"#
        );
    }
}
