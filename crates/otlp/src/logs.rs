//! Log records into `log` records (layout [`crate::model::LOG`]): one
//! series per (service, severity), stored at the record's time, else its
//! observed time, else the request's arrival.

use loom::{field_offset, RecordBuilder};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::logs::v1::LogRecord;

use crate::convert::{push, us, Context, Converted, UNKNOWN_SERVICE};
use crate::model::{fixed_len, LOG, LOG_MEASUREMENT};
use crate::value::{body_text, hex, json_attrs, str_attr};

const SEVERITY_NUMBER: u32 = field_offset!(LOG, "severity_number");
const FLAGS: u32 = field_offset!(LOG, "flags");
const OBSERVED: u32 = field_offset!(LOG, "observed_us");
const TRACE_ID: u32 = field_offset!(LOG, "trace_id");
const SPAN_ID: u32 = field_offset!(LOG, "span_id");
const BODY: u32 = field_offset!(LOG, "body");
const EVENT_NAME: u32 = field_offset!(LOG, "event_name");
const SCOPE: u32 = field_offset!(LOG, "scope");
const ATTRIBUTES: u32 = field_offset!(LOG, "attributes");
const RESOURCE: u32 = field_offset!(LOG, "resource");

/// The `severity` tag: the record's severity text, else the short name of
/// its severity number's range (OTLP's `TRACE` … `FATAL`), else
/// `UNSPECIFIED`.
pub fn severity(r: &LogRecord) -> &str {
    if !r.severity_text.is_empty() {
        return &r.severity_text;
    }
    match r.severity_number {
        1..=4 => "TRACE",
        5..=8 => "DEBUG",
        9..=12 => "INFO",
        13..=16 => "WARN",
        17..=20 => "ERROR",
        21..=24 => "FATAL",
        _ => "UNSPECIFIED",
    }
}

/// Converts every log record of the request; records with a tag value
/// over the limit, of a refused series or too large are counted as
/// rejected with the reason.
pub fn convert(req: &ExportLogsServiceRequest, ctx: &Context) -> Converted {
    let mut out = Converted::default();
    let mut b = RecordBuilder::new();
    let fixed = fixed_len(LOG);
    let max_tag = ctx.config.max_tag_bytes;
    for rl in &req.resource_logs {
        let res = rl.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let service = str_attr(res, "service.name").unwrap_or(UNKNOWN_SERVICE);
        let n: u64 = rl
            .scope_logs
            .iter()
            .map(|s| s.log_records.len() as u64)
            .sum();
        if service.len() > max_tag {
            out.reject_n(
                n,
                format!("service.name longer than {max_tag} bytes (the tag value limit)"),
            );
            continue;
        }
        let mut resource = Vec::new();
        json_attrs(&mut resource, res, |_, _| false);
        for sl in &rl.scope_logs {
            let scope = sl.scope.as_ref().map_or("", |s| s.name.as_str());
            for r in &sl.log_records {
                let sev = severity(r);
                if sev.len() > max_tag {
                    out.reject(format!(
                        "severity text longer than {max_tag} bytes (the tag value limit)"
                    ));
                    continue;
                }
                let time_ns = if r.time_unix_nano != 0 {
                    r.time_unix_nano
                } else {
                    r.observed_time_unix_nano
                };
                let time_us = if time_ns == 0 {
                    ctx.arrival_us
                } else {
                    us(time_ns)
                };
                build(&mut b, fixed, r, scope, &resource);
                let tags = [("service", service), ("severity", sev)];
                push(
                    ctx,
                    &mut out,
                    LOG_MEASUREMENT,
                    &tags,
                    LOG,
                    false,
                    time_us,
                    &b,
                );
            }
        }
    }
    out
}

fn build(b: &mut RecordBuilder, fixed: usize, r: &LogRecord, scope: &str, resource: &[u8]) {
    b.start(fixed);
    b.u8(SEVERITY_NUMBER, r.severity_number.clamp(0, 255) as u8);
    b.u32(FLAGS, r.flags);
    b.u64(OBSERVED, us(r.observed_time_unix_nano));
    b.str_with(TRACE_ID, |o| hex(o, &r.trace_id));
    b.str_with(SPAN_ID, |o| hex(o, &r.span_id));
    b.str_with(BODY, |o| body_text(o, r.body.as_ref()));
    b.str(EVENT_NAME, &r.event_name);
    b.str(SCOPE, scope);
    b.str_with(ATTRIBUTES, |o| json_attrs(o, &r.attributes, |_, _| false));
    b.str_with(RESOURCE, |o| o.extend_from_slice(resource));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::Config;
    use crate::registry::Registry;
    use crate::testing::{kv, read, resource};
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use opentelemetry_proto::tonic::common::v1::AnyValue;
    use opentelemetry_proto::tonic::logs::v1::{ResourceLogs, ScopeLogs};

    #[test]
    fn log_records_become_records() {
        let reg = Registry::new(10, []);
        let config = Config::default();
        let ctx = Context {
            registry: &reg,
            config: &config,
            arrival_us: 777,
        };
        let rec = |time, observed, number, text: &str, body| LogRecord {
            time_unix_nano: time,
            observed_time_unix_nano: observed,
            severity_number: number,
            severity_text: text.into(),
            body: Some(AnyValue { value: Some(body) }),
            attributes: vec![kv("n", Value::IntValue(4))],
            trace_id: vec![1; 16],
            ..Default::default()
        };
        let req = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(resource("db")),
                scope_logs: vec![ScopeLogs {
                    log_records: vec![
                        rec(
                            5_000,
                            9_000,
                            17,
                            "",
                            Value::StringValue("disk \"full\"".into()),
                        ),
                        rec(0, 9_000, 9, "notice", Value::IntValue(3)),
                        rec(0, 0, 0, "", Value::BoolValue(true)),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let out = convert(&req, &ctx);
        assert_eq!(out.rejected, 0, "{}", out.message());
        let got: Vec<(u64, String, String, String)> = out
            .records
            .iter()
            .map(|r| {
                let s = reg.schema(r.source).expect("admitted");
                (
                    r.time_us,
                    s.tag("severity").unwrap_or("").to_string(),
                    read(&s, "body", &r.bytes),
                    read(&s, "severity_number", &r.bytes),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (5, "ERROR".into(), "disk \"full\"".into(), "17".into()),
                (9, "notice".into(), "3".into(), "9".into()),
                (777, "UNSPECIFIED".into(), "true".into(), "0".into()),
            ]
        );
        let s = reg.schema(out.records[0].source).expect("admitted");
        assert_eq!(read(&s, "attributes", &out.records[0].bytes), r#"{"n":4}"#);
        assert_eq!(read(&s, "trace_id", &out.records[0].bytes), "01".repeat(16));
        assert_eq!(read(&s, "observed_us", &out.records[0].bytes), "9");
        assert_eq!(s.tag("service"), Some("db"));
    }
}
