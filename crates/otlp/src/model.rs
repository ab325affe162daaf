//! The OTLP part of the data model: which measurement, tags and fields
//! spans, log records and metric points become, and where each field sits
//! in the stored record.
//!
//! | signal | measurement | tags | fields | range index on |
//! | --- | --- | --- | --- | --- |
//! | span | `span` | `service`, `name` | `duration_us`, `status`, `kind`, `trace_id`, `span_id`, `parent_span_id`, `status_message`, `scope`, `attributes`, `resource`, `events`, `links` | `duration_us` |
//! | log record | `log` | `service`, `severity` | `severity_number`, `flags`, `observed_us`, `trace_id`, `span_id`, `body`, `event_name`, `scope`, `attributes`, `resource` | none |
//! | gauge / sum point | metric name | `service`, `unit`, up to 8 point attributes | `value`, `start_us`, `temporality`, `monotonic`, `attributes`, `resource`, `scope` | none |
//! | histogram / exponential histogram point | metric name | as above | `count`, `sum`, `min`, `max`, `start_us`, `temporality`, `buckets`, `attributes`, `resource`, `scope` | none |
//! | summary point | metric name | as above | `count`, `sum`, `start_us`, `quantiles`, `attributes`, `resource`, `scope` | none |
//!
//! `attributes`, `resource`, `events`, `links`, `buckets` and `quantiles`
//! are JSON text (see [`crate::value`]); every attribute that is not a tag
//! is kept there and returned as a string by raw selects.

use loom::{FieldDef, FieldType, IndexDef, SourceSchema};

use FieldType::{String as Str, F64, U32, U64, U8};

/// Span fields. `duration_us` = (end − start) in whole µs; `status` and
/// `kind` are OTLP's enum numbers; ids are lowercase hex.
pub const SPAN: &[FieldDef] = &[
    FieldDef::new("duration_us", 0, U64),
    FieldDef::new("status", 8, U8),
    FieldDef::new("kind", 9, U8),
    FieldDef::new("trace_id", 16, Str),
    FieldDef::new("span_id", 24, Str),
    FieldDef::new("parent_span_id", 32, Str),
    FieldDef::new("status_message", 40, Str),
    FieldDef::new("scope", 48, Str),
    FieldDef::new("attributes", 56, Str),
    FieldDef::new("resource", 64, Str),
    FieldDef::new("events", 72, Str),
    FieldDef::new("links", 80, Str),
];

/// Log record fields. `body` is the text of a string body, JSON otherwise.
pub const LOG: &[FieldDef] = &[
    FieldDef::new("severity_number", 0, U8),
    FieldDef::new("flags", 4, U32),
    FieldDef::new("observed_us", 8, U64),
    FieldDef::new("trace_id", 16, Str),
    FieldDef::new("span_id", 24, Str),
    FieldDef::new("body", 32, Str),
    FieldDef::new("event_name", 40, Str),
    FieldDef::new("scope", 48, Str),
    FieldDef::new("attributes", 56, Str),
    FieldDef::new("resource", 64, Str),
];

/// Gauge and sum points. Integer values are stored as doubles (exact below
/// 2^53); `temporality` is 0 for gauges, OTLP's number (1 delta, 2
/// cumulative) for sums; `monotonic` is 1 for monotonic sums.
pub const NUMBER: &[FieldDef] = &[
    FieldDef::new("value", 0, F64),
    FieldDef::new("start_us", 8, U64),
    FieldDef::new("temporality", 16, U8),
    FieldDef::new("monotonic", 17, U8),
    FieldDef::new("attributes", 24, Str),
    FieldDef::new("resource", 32, Str),
    FieldDef::new("scope", 40, Str),
];

/// Histogram and exponential-histogram points. `sum`, `min` and `max` are
/// NaN (null in answers) when the point has none; `buckets` holds the
/// bucket layout and counts as JSON.
pub const HISTOGRAM: &[FieldDef] = &[
    FieldDef::new("count", 0, U64),
    FieldDef::new("sum", 8, F64),
    FieldDef::new("min", 16, F64),
    FieldDef::new("max", 24, F64),
    FieldDef::new("start_us", 32, U64),
    FieldDef::new("temporality", 40, U8),
    FieldDef::new("buckets", 48, Str),
    FieldDef::new("attributes", 56, Str),
    FieldDef::new("resource", 64, Str),
    FieldDef::new("scope", 72, Str),
];

/// Summary points; `quantiles` is a JSON array of `[quantile, value]`.
pub const SUMMARY: &[FieldDef] = &[
    FieldDef::new("count", 0, U64),
    FieldDef::new("sum", 8, F64),
    FieldDef::new("start_us", 16, U64),
    FieldDef::new("quantiles", 24, Str),
    FieldDef::new("attributes", 32, Str),
    FieldDef::new("resource", 40, Str),
    FieldDef::new("scope", 48, Str),
];

/// Bytes of `layout`'s fixed part.
pub fn fixed_len(layout: &[FieldDef]) -> usize {
    loom::fixed_len(layout.iter().map(|f| (f.offset, f.ty)))
}

/// Range index of span durations: 100 µs bins up to 200 ms (longer spans
/// share the overflow bin). The bins only narrow what a percentile or
/// range query reads, answers are exact; few bins keep the indexer's
/// per-series scratch space small (one accumulator per bin).
pub const SPAN_INDEX: IndexDef = IndexDef::new("duration_us", 0, 100, 2_000);

/// Measurement of spans.
pub const SPAN_MEASUREMENT: &str = "span";
/// Measurement of log records.
pub const LOG_MEASUREMENT: &str = "log";

/// Measurements metrics may not use: the eBPF telemetry's and the other
/// OTLP signals' (their series would mix with differently shaped ones).
pub const RESERVED: &[&str] = &[
    "kv",
    "syscall",
    "pagecache",
    "packet",
    SPAN_MEASUREMENT,
    LOG_MEASUREMENT,
];

/// The schema of one series.
pub fn schema(
    measurement: &str,
    tags: &[(&str, &str)],
    layout: &[FieldDef],
    indexed: bool,
) -> SourceSchema {
    let mut tags: Vec<(String, String)> = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tags.sort();
    SourceSchema {
        measurement: measurement.to_string(),
        tags,
        fields: layout.to_vec(),
        index: indexed.then_some(SPAN_INDEX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::field_offset;

    #[test]
    fn layouts_are_valid_schemas_without_overlaps() {
        for (layout, indexed) in [
            (SPAN, true),
            (LOG, false),
            (NUMBER, false),
            (HISTOGRAM, false),
            (SUMMARY, false),
        ] {
            let s = schema("m", &[("service", "a")], layout, indexed)
                .validated()
                .expect("valid schema");
            let mut spans: Vec<(u32, u32)> = s
                .fields
                .iter()
                .map(|f| (f.offset, f.offset + f.ty.width() as u32))
                .collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0, "overlapping fields {w:?}");
            }
            for f in &s.fields {
                if f.ty == Str {
                    assert_eq!(f.offset % 8, 0, "descriptor of {} unaligned", f.name);
                }
            }
        }
        assert_eq!(field_offset!(SPAN, "links"), 80);
        assert_eq!(fixed_len(SPAN), 88);
        assert_eq!(fixed_len(NUMBER), 48);
    }
}
