//! Bad OTLP requests fail alone with a clear status: malformed protobuf and
//! JSON, bodies over the limit (also after decompression), unsupported
//! types and encodings, a missing token; unknown fields are skipped as the
//! protocol requires. The series limit answers with partial success and
//! holds across a restart. Requests are real gRPC (tonic) and HTTP/1.1.

// A behaviour test reads top to bottom as one scenario; the function-length
// rule (clippy.toml) is for code outside tests.
#![allow(clippy::too_many_lines)]

#[path = "support/otlp.rs"]
mod support;

use std::io::Write;
use std::path::Path;

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use prost::Message;
use support::{post, query, resource, runtime, series, settles_at, traces, App};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

/// `google.rpc.Status` as the test reads error bodies.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

fn logs(service: &str, severity: &str, n: u64) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: resource(service),
            scope_logs: vec![ScopeLogs {
                log_records: (0..n)
                    .map(|i| LogRecord {
                        time_unix_nano: (1_000 + i) * 1_000_000,
                        severity_text: severity.into(),
                        body: Some(AnyValue {
                            value: Some(Any::StringValue(format!("line {i}"))),
                        }),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

const PROTOBUF: &str = "Content-Type: application/x-protobuf\r\n";
const JSON: &str = "Content-Type: application/json\r\n";

fn rpc_status(body: &[u8]) -> RpcStatus {
    RpcStatus::decode(body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

/// Sends raw bytes as a gRPC request body (no protobuf encoding), so the
/// server sees exactly these bytes.
#[derive(Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        bytes::BufMut::put_slice(dst, &item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        use bytes::Buf;
        let v = src.chunk().to_vec();
        src.advance(v.len());
        Ok(Some(v))
    }
}

async fn raw_grpc(addr: &str, body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| Status::internal(e.to_string()))?
        .connect()
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    );
    grpc.unary(tonic::Request::new(body), path, Raw)
        .await
        .map(|r| r.into_inner())
}

#[test]
fn bad_requests_fail_alone_and_unknown_fields_are_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let app = App::start(
        &dir.path().join("store"),
        &["--otlp-max-body-bytes", "65536"],
    );
    let h = app.http.as_str();
    let mut bad_requests = 0;

    // Malformed protobuf and JSON: 400 with a google.rpc.Status body in the
    // request's encoding.
    let (s, _, b) = post(h, "/v1/traces", PROTOBUF, &[0x0a, 0x05, 0x01]);
    assert_eq!(s, 400);
    let st = rpc_status(&b);
    assert_eq!(st.code, 3);
    assert!(
        st.message
            .contains("malformed protobuf ExportTraceServiceRequest"),
        "{st:?}"
    );
    bad_requests += 1;
    let (s, head, b) = post(
        h,
        "/v1/logs",
        JSON,
        br#"{"resourceLogs": [{"scopeLogs": 5}]}"#,
    );
    assert_eq!(s, 400);
    assert!(head.contains("content-type: application/json"), "{head}");
    let v: serde_json::Value = serde_json::from_slice(&b).expect("JSON status");
    assert_eq!(v["code"], 3);
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("malformed JSON ExportLogsServiceRequest")),
        "{v}"
    );
    bad_requests += 1;

    // Over the limit: as sent, and after gzip expands it.
    let (s, _, b) = post(h, "/v1/traces", PROTOBUF, &vec![0u8; 70_000]);
    assert_eq!(s, 413);
    assert!(rpc_status(&b).message.contains("65536"));
    bad_requests += 1;
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&vec![0u8; 10 << 20]).expect("gzip");
    let bomb = z.finish().expect("gzip");
    assert!(bomb.len() < 65536);
    let (s, _, _) = post(
        h,
        "/v1/traces",
        &format!("{PROTOBUF}Content-Encoding: gzip\r\n"),
        &bomb,
    );
    assert_eq!(s, 413, "10 MiB behind a {} byte gzip body", bomb.len());
    bad_requests += 1;
    let (s, _, b) = post(
        h,
        "/v1/traces",
        &format!("{PROTOBUF}Content-Encoding: gzip\r\n"),
        b"not gzip",
    );
    assert_eq!(s, 400);
    assert!(rpc_status(&b).message.contains("compressed"));
    bad_requests += 1;

    // Types and encodings OTLP/HTTP does not have.
    let (s, _, _) = post(h, "/v1/traces", "Content-Type: text/plain\r\n", b"x");
    assert_eq!(s, 415);
    bad_requests += 1;
    let (s, _, _) = post(
        h,
        "/v1/traces",
        &format!("{PROTOBUF}Content-Encoding: br\r\n"),
        b"x",
    );
    assert_eq!(s, 415);
    bad_requests += 1;
    let (s, _, _) = support::http(
        h,
        b"GET /v1/traces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(s, 405);
    let (s, _, _) = post(h, "/v2/traces", PROTOBUF, b"");
    assert_eq!(s, 404);

    // gRPC: bytes that are not the message, and a message over the limit.
    let rt = runtime();
    let e = rt
        .block_on(raw_grpc(&app.grpc, vec![0x0a, 0x05, 0x01]))
        .expect_err("malformed");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("decode"), "{e:?}");
    // Decoded by loom-app after it is logged (not by tonic): counted as a
    // bad request like HTTP's.
    bad_requests += 1;
    let name = "n".repeat(200);
    let big = traces("big", &[(name.as_str(), 1, 1); 400]).encode_to_vec();
    assert!(big.len() > 65536);
    let e = rt
        .block_on(raw_grpc(&app.grpc, big))
        .expect_err("too large");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert!(e.message().contains("--otlp-max-body-bytes"), "{e:?}");
    // Refused by tonic before a handler runs: counted all the same.
    bad_requests += 1;

    // Unknown fields (a newer client's) are skipped: field 99 appended to
    // the request and to a span, unknown JSON keys.
    let mut body = traces("svc", &[("op", 1_000_000, 5)]).encode_to_vec();
    body.extend_from_slice(&[0x98, 0x06, 0x01]);
    let (s, _, b) = post(h, "/v1/traces", PROTOBUF, &body);
    assert_eq!(s, 200, "{}", String::from_utf8_lossy(&b));
    assert_eq!(
        ExportTraceServiceResponse::decode(&b[..])
            .expect("response")
            .partial_success,
        None
    );
    let ok = rt.block_on(raw_grpc(&app.grpc, body.clone()));
    assert!(ok.is_ok(), "{ok:?}");
    let json = br#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
        "futureField":{"x":[1,2]},
        "scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708",
        "name":"op","kind":2,"startTimeUnixNano":"1000001000000","endTimeUnixNano":"1000001007000","someNewThing":true}]}]}]}"#;
    let (s, _, b) = post(h, "/v1/traces", JSON, json);
    assert_eq!(s, 200, "{}", String::from_utf8_lossy(&b));
    assert_eq!(b, b"{}");

    // Nothing else was disturbed: exactly the three good spans are stored,
    // and the endpoint still takes requests.
    let (s, _, _) = post(
        h,
        "/v1/traces",
        PROTOBUF,
        &traces("svc", &[("op", 1_000_001_002, 9)]).encode_to_vec(),
    );
    assert_eq!(s, 200);
    settles_at(
        &app.influx,
        "SELECT count(duration_us) FROM span WHERE service = 'svc'",
        4,
    );
    let v = query(&app.influx, "SELECT duration_us, trace_id FROM span WHERE service = 'svc' AND time >= 1000001000000 AND time <= 1000001000000");
    assert_eq!(
        series(&v)[0]["values"],
        serde_json::json!([[1_000_001_000u64, 7, "0102030405060708090a0b0c0d0e0f10"]])
    );
    let finals = app.stop().join("\n");
    assert!(
        finals.contains(&format!("bad requests {bad_requests}")),
        "{finals}"
    );
    assert!(finals.contains("items accepted 4, rejected 0"), "{finals}");
    assert!(finals.contains("late refused 0"), "{finals}");
}

#[test]
fn series_limit_answers_partial_success_and_holds_after_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let app = App::start(&store, &["--otlp-max-series", "3"]);
    let rt = runtime();

    // Five span names, two spans each: the first three names are series
    // 1–3, the other four spans are refused.
    let spans: Vec<(&str, u64, u64)> = ["a", "b", "c", "d", "e"]
        .iter()
        .flat_map(|n| [(*n, 2_000_000, 10), (*n, 2_000_001, 20)])
        .collect();
    let (s, _, b) = post(
        &app.http,
        "/v1/traces",
        PROTOBUF,
        &traces("svc", &spans).encode_to_vec(),
    );
    assert_eq!(s, 200);
    let p = ExportTraceServiceResponse::decode(&b[..])
        .expect("response")
        .partial_success
        .expect("partial success");
    assert_eq!(p.rejected_spans, 4);
    assert!(p.error_message.contains("series limit of 3"), "{p:?}");
    assert!(p.error_message.contains("span name=d service=svc"), "{p:?}");

    // Over gRPC: every log record is of a new series, so all are refused.
    let grpc = format!("http://{}", app.grpc);
    let r = rt
        .block_on(async {
            let mut c = LogsServiceClient::connect(grpc.clone()).await?;
            c.export(logs("svc", "INFO", 5)).await.map_err(Into::into)
        })
        .map_err(|e: Box<dyn std::error::Error>| e.to_string())
        .expect("logs export");
    let p = r.into_inner().partial_success.expect("partial success");
    assert_eq!(p.rejected_log_records, 5);
    assert!(p.error_message.contains("series limit"), "{p:?}");
    // A known series is still taken.
    let r = rt
        .block_on(async {
            let mut c = TraceServiceClient::connect(grpc.clone()).await?;
            c.export(traces("svc", &[("a", 2_000_005, 30)]))
                .await
                .map_err(Into::into)
        })
        .map_err(|e: Box<dyn std::error::Error>| e.to_string())
        .expect("trace export");
    assert_eq!(r.into_inner().partial_success, None);

    let q = "SELECT count(duration_us) FROM span GROUP BY name";
    let by_name = || -> Vec<(String, u64)> {
        series(&query(&app.influx, q))
            .iter()
            .map(|s| {
                (
                    s["tags"]["name"].as_str().unwrap_or_default().to_string(),
                    s["values"][0][1].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    settles_at(&app.influx, "SELECT count(duration_us) FROM span", 7);
    assert_eq!(
        by_name(),
        vec![("a".into(), 3), ("b".into(), 2), ("c".into(), 2)]
    );
    let finals = app.stop().join("\n");
    assert!(
        finals.contains("items accepted 7, rejected 9 (partial success)"),
        "{finals}"
    );

    // Reopened: the store's three series count toward the limit, a known
    // one continues after its newest record.
    let app = App::start(Path::new(&store), &["--otlp-max-series", "3"]);
    let (s, _, b) = post(
        &app.http,
        "/v1/traces",
        PROTOBUF,
        &traces("svc", &[("b", 2_000_010, 40), ("z", 2_000_010, 40)]).encode_to_vec(),
    );
    assert_eq!(s, 200);
    let p = ExportTraceServiceResponse::decode(&b[..])
        .expect("response")
        .partial_success
        .expect("partial success");
    assert_eq!(p.rejected_spans, 1, "{p:?}");
    settles_at(
        &app.influx,
        "SELECT count(duration_us) FROM span WHERE name = 'b'",
        3,
    );
    let finals = app.stop().join("\n");
    assert!(finals.contains("late refused 0"), "{finals}");
}

#[test]
fn a_token_is_required_when_configured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").expect("write token");
    let t = token.to_string_lossy().to_string();
    let app = App::start(&dir.path().join("store"), &["--auth-token-file", &t]);
    let body = traces("svc", &[("op", 3_000_000, 1)]).encode_to_vec();
    let (s, _, b) = post(&app.http, "/v1/traces", PROTOBUF, &body);
    assert_eq!(s, 401);
    assert_eq!(rpc_status(&b).code, 16);
    let (s, _, _) = post(
        &app.http,
        "/v1/traces",
        &format!("{PROTOBUF}Authorization: Bearer wrong\r\n"),
        &body,
    );
    assert_eq!(s, 401);
    let (s, _, _) = post(
        &app.http,
        "/v1/traces",
        &format!("{PROTOBUF}Authorization: Bearer s3cret\r\n"),
        &body,
    );
    assert_eq!(s, 200);

    let rt = runtime();
    let grpc = format!("http://{}", app.grpc);
    let export = |auth: Option<&'static str>| {
        rt.block_on(async {
            let mut c = TraceServiceClient::connect(grpc.clone())
                .await
                .map_err(|e| Status::internal(e.to_string()))?;
            let mut req = tonic::Request::new(traces("svc", &[("op", 3_000_001, 1)]));
            if let Some(a) = auth {
                req.metadata_mut().insert(
                    "authorization",
                    a.parse().map_err(|_| Status::internal("header"))?,
                );
            }
            c.export(req).await
        })
    };
    let e = export(None).expect_err("no token");
    assert_eq!(e.code(), Code::Unauthenticated);
    assert!(export(Some("Bearer s3cret")).is_ok());
    // The InfluxDB API takes the same token.
    let v = support::http(
        &app.influx,
        b"GET /query?p=s3cret&q=SELECT%20count(duration_us)%20FROM%20span HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(v.0, 200);
}

/// A client that stalls mid-body gets 408 once `--otlp-read-timeout-ms`
/// passes, and only its connection is affected: another client is served
/// meanwhile and what it sent is stored.
#[test]
fn a_stalled_body_times_out_alone() {
    use std::io::Read;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().expect("tempdir");
    let app = App::start(
        &dir.path().join("store"),
        &["--otlp-read-timeout-ms", "500"],
    );
    let body = traces("svc", &[("op", 3_000_000, 1)]).encode_to_vec();
    let mut stalled = std::net::TcpStream::connect(&app.http).expect("connect");
    stalled
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let started = Instant::now();
    write!(
        stalled,
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n{PROTOBUF}\r\n",
        body.len() + 100
    )
    .expect("send head");
    stalled.write_all(&body).expect("send part of the body");

    let (s, _, _) = post(&app.http, "/v1/traces", PROTOBUF, &body);
    assert_eq!(s, 200, "another client while one stalls");

    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match stalled.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&got);
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(20),
        "answered after {waited:?}"
    );
    settles_at(&app.influx, "SELECT count(duration_us) FROM span", 1);
}
