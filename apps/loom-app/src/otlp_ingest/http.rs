//! OTLP/HTTP: `POST /v1/traces`, `/v1/logs`, `/v1/metrics` with protobuf
//! (`application/x-protobuf`) or JSON (`application/json`) bodies, plain,
//! gzip or deflate; answers in the request's encoding.
//!
//! Status codes as the OTLP specification assigns them: 200 (with partial
//! success when items were refused), 400 for a body that does not decode,
//! 413 over `--otlp-max-body-bytes` (also after decompression), 415 for
//! other content types or encodings, 401 without the token, 408 for a
//! body that stalls past `--otlp-read-timeout-ms`, and 503 with
//! `Retry-After` when the ingest queue is full, ingest has stopped, or the
//! records could not be made durable within `--otlp-ack-timeout-ms`.
//! Error bodies are `google.rpc.Status` messages.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use otlp::{Encoding, Signal};
use prost::Message;

use super::intake::{Intake, Outcome, RETRY_AFTER_S};

/// `google.rpc.Status` (code and message; no details), the body of error
/// responses.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// gRPC status codes used in error bodies.
const INVALID_ARGUMENT: i32 = 3;
const DEADLINE_EXCEEDED: i32 = 4;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNAVAILABLE: i32 = 14;
const UNAUTHENTICATED: i32 = 16;

/// The OTLP/HTTP routes over one intake.
pub fn router(intake: Arc<Intake>) -> Router {
    Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/logs", post(logs))
        .route("/v1/metrics", post(metrics))
        .with_state(intake)
}

async fn traces(State(i): State<Arc<Intake>>, h: HeaderMap, body: Body) -> Response {
    export(&i, Signal::Traces, &h, body).await
}

async fn logs(State(i): State<Arc<Intake>>, h: HeaderMap, body: Body) -> Response {
    export(&i, Signal::Logs, &h, body).await
}

async fn metrics(State(i): State<Arc<Intake>>, h: HeaderMap, body: Body) -> Response {
    export(&i, Signal::Metrics, &h, body).await
}

fn error(status: StatusCode, code: i32, encoding: Encoding, message: String) -> Response {
    let body = match encoding {
        Encoding::Protobuf => RpcStatus { code, message }.encode_to_vec(),
        Encoding::Json => serde_json::json!({ "code": code, "message": message })
            .to_string()
            .into_bytes(),
    };
    (
        status,
        [(header::CONTENT_TYPE, encoding.content_type())],
        body,
    )
        .into_response()
}

/// A refused request: counted, logged (the first few), answered.
fn bad(
    intake: &Intake,
    status: StatusCode,
    code: i32,
    encoding: Encoding,
    message: String,
) -> Response {
    intake.bad_request(&message);
    error(status, code, encoding, message)
}

fn throttled(o: &Outcome, encoding: Encoding) -> Response {
    let message = super::intake::retry_message(o);
    let mut r = error(
        StatusCode::SERVICE_UNAVAILABLE,
        UNAVAILABLE,
        encoding,
        message,
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, RETRY_AFTER_S.into());
    r
}

/// The success body: an `Export…ServiceResponse`, with partial success
/// when items were refused.
fn success(signal: Signal, encoding: Encoding, rejected: u64, message: String) -> Response {
    use opentelemetry_proto::tonic::collector::logs::v1 as l;
    use opentelemetry_proto::tonic::collector::metrics::v1 as m;
    use opentelemetry_proto::tonic::collector::trace::v1 as t;
    let n = i64::try_from(rejected).unwrap_or(i64::MAX);
    let body = match encoding {
        Encoding::Json => {
            let key = match signal {
                Signal::Traces => "rejectedSpans",
                Signal::Logs => "rejectedLogRecords",
                Signal::Metrics => "rejectedDataPoints",
            };
            let v = if rejected > 0 {
                serde_json::json!({ "partialSuccess": { key: n, "errorMessage": message } })
            } else {
                serde_json::json!({})
            };
            v.to_string().into_bytes()
        }
        Encoding::Protobuf => {
            let partial = rejected > 0;
            match signal {
                Signal::Traces => t::ExportTraceServiceResponse {
                    partial_success: partial.then_some(t::ExportTracePartialSuccess {
                        rejected_spans: n,
                        error_message: message,
                    }),
                }
                .encode_to_vec(),
                Signal::Logs => l::ExportLogsServiceResponse {
                    partial_success: partial.then_some(l::ExportLogsPartialSuccess {
                        rejected_log_records: n,
                        error_message: message,
                    }),
                }
                .encode_to_vec(),
                Signal::Metrics => m::ExportMetricsServiceResponse {
                    partial_success: partial.then_some(m::ExportMetricsPartialSuccess {
                        rejected_data_points: n,
                        error_message: message,
                    }),
                }
                .encode_to_vec(),
            }
        }
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, encoding.content_type())],
        body,
    )
        .into_response()
}

/// Why a request body could not be read.
enum BodyError {
    TooLarge,
    TimedOut,
    Broken(String),
}

/// Reads the body, at most `limit` bytes, waiting at most `timeout`.
async fn read_body(body: Body, limit: usize, timeout: Duration) -> Result<bytes::Bytes, BodyError> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => Err(BodyError::TimedOut),
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
                || e.to_string().contains("length limit");
            Err(if too_large {
                BodyError::TooLarge
            } else {
                BodyError::Broken(e.to_string())
            })
        }
    }
}

/// One export request: checked (type, token, load), read, logged raw
/// (durable acknowledgements), decoded, converted, then taken by the
/// intake. Every refusal answers in the
/// request's own encoding.
async fn export(intake: &Intake, signal: Signal, headers: &HeaderMap, body: Body) -> Response {
    let encoding = match admit(intake, headers) {
        Ok(e) => e,
        Err(refused) => return *refused,
    };
    let plain = match read_plain(intake, headers, body, encoding).await {
        Ok(p) => p,
        Err(refused) => return *refused,
    };
    match intake.export_body(signal, encoding, &plain).await {
        Ok(Outcome::Accepted { rejected, message }) => success(signal, encoding, rejected, message),
        Ok(o) => throttled(&o, encoding),
        Err(e) => refused_body(intake, encoding, &e),
    }
}

/// A header of the request as text, if present and valid.
fn header_text(headers: &HeaderMap, h: header::HeaderName) -> Option<&str> {
    headers.get(h).and_then(|v| v.to_str().ok())
}

/// The request's encoding, once its Content-Type is known, its token right
/// and the intake not busy; otherwise the refusal.
fn admit(intake: &Intake, headers: &HeaderMap) -> Result<Encoding, Box<Response>> {
    let content_type = header_text(headers, header::CONTENT_TYPE).unwrap_or("");
    let Some(encoding) = Encoding::from_content_type(content_type) else {
        return Err(Box::new(bad(
            intake,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_ARGUMENT,
            Encoding::Json,
            format!(
                "Content-Type {content_type:?} not supported: use application/x-protobuf or application/json"
            ),
        )));
    };
    if !intake.authorized(header_text(headers, header::AUTHORIZATION)) {
        return Err(Box::new(bad(
            intake,
            StatusCode::UNAUTHORIZED,
            UNAUTHENTICATED,
            encoding,
            "missing or wrong token (Authorization: Bearer <token>)".into(),
        )));
    }
    if let Some(o) = intake.busy() {
        return Err(Box::new(throttled(&o, encoding)));
    }
    Ok(encoding)
}

/// The body, read within the size and time limits and decompressed as its
/// Content-Encoding says; otherwise the refusal.
async fn read_plain(
    intake: &Intake,
    headers: &HeaderMap,
    body: Body,
    encoding: Encoding,
) -> Result<Vec<u8>, Box<Response>> {
    let limit = intake.max_body;
    let refuse =
        |status, code, message| Err(Box::new(bad(intake, status, code, encoding, message)));
    let raw = match read_body(body, limit, intake.read_timeout).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                RESOURCE_EXHAUSTED,
                format!(
                    "request body larger than the limit of {limit} bytes (--otlp-max-body-bytes)"
                ),
            )
        }
        Err(BodyError::TimedOut) => {
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                DEADLINE_EXCEEDED,
                format!(
                    "the request body did not arrive within {} ms (--otlp-read-timeout-ms)",
                    intake.read_timeout.as_millis()
                ),
            )
        }
        Err(BodyError::Broken(e)) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                INVALID_ARGUMENT,
                format!("reading the request body: {e}"),
            )
        }
    };
    let plain = match header_text(headers, header::CONTENT_ENCODING)
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "" | "identity" => Ok(raw.to_vec()),
        "gzip" => otlp::gunzip(&raw, limit),
        "deflate" => otlp::inflate(&raw, limit),
        other => {
            return refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                INVALID_ARGUMENT,
                format!("Content-Encoding {other:?} not supported: use gzip, deflate or none"),
            )
        }
    };
    plain.map_err(|e| Box::new(refused_body(intake, encoding, &e)))
}

/// The answer to a body that could not be decompressed, decoded or
/// converted: 413 when it is too large once decoded, else 400.
fn refused_body(intake: &Intake, encoding: Encoding, e: &otlp::Error) -> Response {
    let (status, code) = if e.is_too_large() {
        (StatusCode::PAYLOAD_TOO_LARGE, RESOURCE_EXHAUSTED)
    } else {
        (StatusCode::BAD_REQUEST, INVALID_ARGUMENT)
    };
    bad(intake, status, code, encoding, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::Counters;
    use axum::http::Request;
    use tower::ServiceExt;

    use super::super::intake::testing::full_intake;

    #[tokio::test]
    async fn a_full_queue_answers_503_with_retry_after() {
        let (intake, counters, rx) = full_intake();
        let app = router(intake);
        let req = |ct: &str| {
            Request::post("/v1/traces")
                .header(header::CONTENT_TYPE, ct)
                .body(Body::from(Vec::<u8>::new()))
                .expect("request")
        };
        let r = app
            .clone()
            .oneshot(req("application/json"))
            .await
            .expect("response");
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            r.headers().get(header::RETRY_AFTER).map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
        let body = axum::body::to_bytes(r.into_body(), 1 << 16)
            .await
            .expect("body");
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["code"], UNAVAILABLE);
        // Once the queue has room, the same request is taken.
        let _ = rx.try_recv();
        let r = app
            .oneshot(req("application/x-protobuf"))
            .await
            .expect("response");
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(Counters::get(&counters.otlp_throttled), 1);
        assert_eq!(Counters::get(&counters.otlp_requests), 1);
    }
}
