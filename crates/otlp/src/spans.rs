//! Spans into `span` records (layout [`crate::model::SPAN`]): one series
//! per (service, span name), stored at the span's start time.

use loom::{field_offset, RecordBuilder};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;

use crate::convert::{push, us, Context, Converted, UNKNOWN_SERVICE};
use crate::model::{fixed_len, SPAN, SPAN_MEASUREMENT};
use crate::value::{hex, json_attrs, json_str, str_attr};

const DURATION: u32 = field_offset!(SPAN, "duration_us");
const STATUS: u32 = field_offset!(SPAN, "status");
const KIND: u32 = field_offset!(SPAN, "kind");
const TRACE_ID: u32 = field_offset!(SPAN, "trace_id");
const SPAN_ID: u32 = field_offset!(SPAN, "span_id");
const PARENT: u32 = field_offset!(SPAN, "parent_span_id");
const STATUS_MESSAGE: u32 = field_offset!(SPAN, "status_message");
const SCOPE: u32 = field_offset!(SPAN, "scope");
const ATTRIBUTES: u32 = field_offset!(SPAN, "attributes");
const RESOURCE: u32 = field_offset!(SPAN, "resource");
const EVENTS: u32 = field_offset!(SPAN, "events");
const LINKS: u32 = field_offset!(SPAN, "links");

/// Converts every span of the request; spans without a start time, ending
/// before they start, with a tag value over the limit, of a refused series
/// or too large for the store are counted as rejected with the reason.
pub fn convert(req: &ExportTraceServiceRequest, ctx: &Context) -> Converted {
    let mut out = Converted::default();
    let mut b = RecordBuilder::new();
    let fixed = fixed_len(SPAN);
    let max_tag = ctx.config.max_tag_bytes;
    for rs in &req.resource_spans {
        let res = rs.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let service = str_attr(res, "service.name").unwrap_or(UNKNOWN_SERVICE);
        let n: u64 = rs.scope_spans.iter().map(|s| s.spans.len() as u64).sum();
        if service.len() > max_tag {
            out.reject_n(
                n,
                format!("service.name longer than {max_tag} bytes (the tag value limit)"),
            );
            continue;
        }
        let mut resource = Vec::new();
        json_attrs(&mut resource, res, |_, _| false);
        for ss in &rs.scope_spans {
            let scope = ss.scope.as_ref().map_or("", |s| s.name.as_str());
            for span in &ss.spans {
                if span.name.len() > max_tag {
                    out.reject(format!(
                        "span name longer than {max_tag} bytes (the tag value limit)"
                    ));
                    continue;
                }
                if span.start_time_unix_nano == 0 {
                    out.reject(format!("span {:?} has no start time", span.name));
                    continue;
                }
                if span.end_time_unix_nano < span.start_time_unix_nano {
                    out.reject(format!("span {:?} ends before it starts", span.name));
                    continue;
                }
                build(&mut b, fixed, span, scope, &resource);
                let tags = [("name", span.name.as_str()), ("service", service)];
                push(
                    ctx,
                    &mut out,
                    SPAN_MEASUREMENT,
                    &tags,
                    SPAN,
                    true,
                    us(span.start_time_unix_nano),
                    &b,
                );
            }
        }
    }
    out
}

fn build(b: &mut RecordBuilder, fixed: usize, span: &Span, scope: &str, resource: &[u8]) {
    b.start(fixed);
    b.u64(
        DURATION,
        us(span.end_time_unix_nano - span.start_time_unix_nano),
    );
    let (code, message) = span
        .status
        .as_ref()
        .map_or((0, ""), |s| (s.code, s.message.as_str()));
    b.u8(STATUS, code.clamp(0, 255) as u8);
    b.u8(KIND, span.kind.clamp(0, 255) as u8);
    b.str_with(TRACE_ID, |o| hex(o, &span.trace_id));
    b.str_with(SPAN_ID, |o| hex(o, &span.span_id));
    b.str_with(PARENT, |o| hex(o, &span.parent_span_id));
    b.str(STATUS_MESSAGE, message);
    b.str(SCOPE, scope);
    b.str_with(ATTRIBUTES, |o| {
        json_attrs(o, &span.attributes, |_, _| false)
    });
    b.str_with(RESOURCE, |o| o.extend_from_slice(resource));
    b.str_with(EVENTS, |o| {
        o.push(b'[');
        for (i, e) in span.events.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            o.extend_from_slice(b"{\"time_us\":");
            o.extend_from_slice(us(e.time_unix_nano).to_string().as_bytes());
            o.extend_from_slice(b",\"name\":");
            json_str(o, &e.name);
            o.extend_from_slice(b",\"attributes\":");
            json_attrs(o, &e.attributes, |_, _| false);
            o.push(b'}');
        }
        o.push(b']');
    });
    b.str_with(LINKS, |o| {
        o.push(b'[');
        for (i, l) in span.links.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            o.extend_from_slice(b"{\"trace_id\":\"");
            hex(o, &l.trace_id);
            o.extend_from_slice(b"\",\"span_id\":\"");
            hex(o, &l.span_id);
            o.extend_from_slice(b"\",\"attributes\":");
            json_attrs(o, &l.attributes, |_, _| false);
            o.push(b'}');
        }
        o.push(b']');
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::Config;
    use crate::registry::Registry;
    use crate::testing::{kv_str, read, resource};
    use opentelemetry_proto::tonic::trace::v1::span::Event;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Status};

    fn span(name: &str, start: u64, end: u64) -> Span {
        Span {
            trace_id: vec![0xab; 16],
            span_id: vec![1, 2, 3, 4, 5, 6, 7, 8],
            name: name.into(),
            kind: 2,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: vec![kv_str("http.route", "/a")],
            status: Some(Status {
                message: "boom".into(),
                code: 2,
            }),
            events: vec![Event {
                time_unix_nano: 5_000,
                name: "exception".into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn spans_become_records_and_bad_ones_are_counted() {
        let reg = Registry::new(10, []);
        let config = Config::default();
        let ctx = Context {
            registry: &reg,
            config: &config,
            arrival_us: 0,
        };
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(resource("web")),
                scope_spans: vec![ScopeSpans {
                    spans: vec![
                        span("GET", 3_000_000, 3_123_456),
                        span("GET", 0, 5),
                        span("PUT", 9_000, 8_000),
                        span(&"x".repeat(300), 1, 2),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let out = convert(&req, &ctx);
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.rejected, 3);
        let m = out.message();
        assert!(m.contains("no start time") && m.contains("ends before") && m.contains("256"));
        let r = &out.records[0];
        assert_eq!(r.time_us, 3_000);
        let schema = reg.schema(r.source).expect("admitted");
        assert_eq!(
            schema.tags,
            vec![
                ("name".to_string(), "GET".to_string()),
                ("service".into(), "web".into())
            ]
        );
        let f = |n: &str| read(&schema, n, &r.bytes);
        assert_eq!(f("duration_us"), "123");
        assert_eq!(f("status"), "2");
        assert_eq!(f("kind"), "2");
        assert_eq!(f("trace_id"), "ab".repeat(16));
        assert_eq!(f("span_id"), "0102030405060708");
        assert_eq!(f("parent_span_id"), "");
        assert_eq!(f("status_message"), "boom");
        assert_eq!(f("attributes"), r#"{"http.route":"/a"}"#);
        assert_eq!(f("resource"), r#"{"service.name":"web"}"#);
        assert_eq!(
            f("events"),
            r#"[{"time_us":5,"name":"exception","attributes":{}}]"#
        );
        assert_eq!(f("links"), "[]");
    }
}
