//! gzip-compressed OTLP/gRPC requests that cannot be taken are refused
//! alone, with a status a client does not retry, and counted: a body that
//! expands past `--otlp-max-body-bytes` (a decompression bomb) and a body
//! flagged compressed that is not gzip. The requests around them are
//! stored. Requests are real gRPC over HTTP/2 (tonic).

#[path = "support/otlp.rs"]
mod support;

use std::io::Write;

use http_body_util::BodyExt;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use support::{runtime, settles_at, traces, App};
use tonic::{Code, Status};
use tower::{Service, ServiceExt};

/// A gRPC request small on the wire that gzip expands far beyond
/// `--otlp-max-body-bytes` (a decompression bomb) is refused alone with
/// RESOURCE_EXHAUSTED and counted; loom-app never holds the expanded body
/// (its peak memory grows by less than the bomb's size), and the good
/// gzip requests before and after it are stored.
#[test]
fn a_grpc_gzip_bomb_is_refused_alone() {
    const BOMB: usize = 48 << 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let app = App::start(
        &dir.path().join("store"),
        &["--otlp-max-body-bytes", "65536"],
    );
    let rt = runtime();
    let grpc = format!("http://{}", app.grpc);
    let export = |req| gzip_export(&rt, &grpc, req);
    let good = export(traces("gz", &[("op", 2_000_000_000, 3)]));
    assert!(good.is_ok_and(|r| r.partial_success.is_none()));

    let name = "a".repeat(BOMB);
    let bomb = traces("gz", &[(name.as_str(), 2_000_000_001, 3)]);
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&bomb.encode_to_vec()).expect("gzip");
    let wire = z.finish().expect("gzip").len();
    assert!(wire < 65536, "the bomb is {wire} bytes on the wire");
    let before = support::peak_rss(app.app.process.pid());
    let e = export(bomb).expect_err("bomb");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert!(e.message().contains("--otlp-max-body-bytes"), "{e:?}");
    let grown = support::peak_rss(app.app.process.pid()).saturating_sub(before);
    assert!(
        grown < (BOMB / 2) as u64,
        "peak memory grew by {grown} bytes for a {wire}-byte request expanding to {BOMB}"
    );

    let good = export(traces("gz", &[("op", 2_000_000_002, 4)]));
    assert!(good.is_ok_and(|r| r.partial_success.is_none()));
    stored_around_one_refusal(app, "gz");
}

/// A gRPC message flagged compressed (`grpc-encoding: gzip`, compressed
/// flag 1) whose bytes are not gzip: tonic answers INTERNAL, which reads
/// as a server fault, so loom-app answers INVALID_ARGUMENT (not retried:
/// the same bytes would fail forever) and counts a bad request; the good
/// requests before and after it are stored. The frame is built by hand,
/// as tonic's client only sends gzip it made itself.
#[test]
fn a_grpc_body_that_is_not_gzip_is_refused_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let app = App::start(&dir.path().join("store"), &[]);
    let rt = runtime();
    let grpc = format!("http://{}", app.grpc);
    let export = |req| gzip_export(&rt, &grpc, req);
    let good = export(traces("nz", &[("op", 2_000_000_000, 3)]));
    assert!(good.is_ok_and(|r| r.partial_success.is_none()));

    let body = traces("nz", &[("op", 2_000_000_001, 5)]).encode_to_vec();
    let mut frame = vec![1u8];
    frame.extend_from_slice(&u32::try_from(body.len()).expect("small").to_be_bytes());
    frame.extend_from_slice(&body);
    let (code, message) = rt.block_on(async {
        let mut channel = tonic::transport::Endpoint::from_shared(grpc.clone())
            .expect("endpoint")
            .connect()
            .await
            .expect("connect");
        let req = tonic::codegen::http::Request::builder()
            .method("POST")
            .uri(format!(
                "{grpc}/opentelemetry.proto.collector.trace.v1.TraceService/Export"
            ))
            .header("content-type", "application/grpc")
            .header("grpc-encoding", "gzip")
            .header("te", "trailers")
            .body(tonic::body::Body::new(http_body_util::Full::new(
                bytes::Bytes::from(frame),
            )))
            .expect("request");
        let res = channel
            .ready()
            .await
            .expect("ready")
            .call(req)
            .await
            .expect("an HTTP/2 answer");
        let mut fields = res.headers().clone();
        let body = res.into_body().collect().await.expect("body");
        if let Some(t) = body.trailers() {
            fields.extend(t.clone());
        }
        let get = |k: &str| {
            fields
                .get(k)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        (get("grpc-status"), get("grpc-message"))
    });
    assert_eq!(code, "3", "INVALID_ARGUMENT expected; message {message:?}");
    assert!(message.to_lowercase().contains("decompress"), "{message:?}");

    let good = export(traces("nz", &[("op", 2_000_000_002, 4)]));
    assert!(good.is_ok_and(|r| r.partial_success.is_none()));
    stored_around_one_refusal(app, "nz");
}

/// Exports `req` over gRPC with gzip, as a stock client configured for
/// compression does (no limit on the message size it sends).
fn gzip_export(
    rt: &tokio::runtime::Runtime,
    grpc: &str,
    req: ExportTraceServiceRequest,
) -> Result<ExportTraceServiceResponse, Status> {
    rt.block_on(async {
        let c = TraceServiceClient::connect(grpc.to_string())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let mut c = c
            .send_compressed(tonic::codec::CompressionEncoding::Gzip)
            .max_encoding_message_size(usize::MAX);
        c.export(req).await.map(|r| r.into_inner())
    })
}

/// After one refused request between two good ones of `service`: both good
/// requests' spans are stored, and loom-app's final lines count exactly one
/// bad request and two accepted items.
fn stored_around_one_refusal(app: App, service: &str) {
    settles_at(
        &app.influx,
        &format!("SELECT count(duration_us) FROM span WHERE service = '{service}'"),
        2,
    );
    let finals = app.stop().join("\n");
    assert!(finals.contains("bad requests 1"), "{finals}");
    assert!(finals.contains("items accepted 2, rejected 0"), "{finals}");
}
