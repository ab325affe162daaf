//! OTLP/gRPC: the three export services (tonic, over a codec that keeps
//! the message as bytes so it is logged raw before it is decoded: see
//! `grpc_raw.rs`), gzip accepted, messages bounded by
//! `--otlp-max-body-bytes`.
//!
//! Status codes as the OTLP specification assigns them: UNAVAILABLE
//! (retryable) when the ingest queue is full, ingest has stopped, or the
//! records could not be made durable within `--otlp-ack-timeout-ms`,
//! UNAUTHENTICATED without the token; partial success in the response when
//! items were refused; INVALID_ARGUMENT for a message that does not
//! decode. Messages over the limit are refused by tonic before a handler
//! runs; [`refine_status`] gives those refusals the codes OTLP clients act
//! on (see there).

use std::sync::Arc;

use axum::http::{HeaderValue, Response as HttpResponse};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use otlp::{Encoding, Signal};
use prost::Message;
use tonic::{Request, Response, Status};

use super::grpc_raw::{Logs, Metrics, RawServer, Traces};
use super::intake::{Intake, Outcome};

/// Rewrites the status of tonic's own refusals, which come before a
/// handler runs, and counts each as a bad request (the handlers count
/// theirs). tonic answers a message that does not decode with INTERNAL (a
/// server fault, to a client), a gzip body that does not decompress with
/// INTERNAL too, and one over the size limit with OUT_OF_RANGE, which
/// OTLP clients retry: the same too-large request would come back forever.
/// These become INVALID_ARGUMENT and RESOURCE_EXHAUSTED without retry
/// information (both not retryable under OTLP), the latter naming the
/// limit and its flag. A compressed message is decompressed into a buffer
/// bounded by the limit (tonic's `max_decoding_message_size`), so a small
/// body that expands beyond it (a decompression bomb) is refused with
/// RESOURCE_EXHAUSTED having held at most the limit.
pub fn refine_status<B>(mut res: HttpResponse<B>, intake: &Intake) -> HttpResponse<B> {
    let max_body = intake.max_body;
    let headers = res.headers_mut();
    let code = headers.get("grpc-status").and_then(|v| v.to_str().ok());
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| m.replace("%20", " "))
        .unwrap_or_default();
    let too_large =
        || format!("request larger than the limit of {max_body} bytes (--otlp-max-body-bytes)");
    match code {
        Some("13")
            if message.contains("failed to decode") || message.contains("Error decompressing") =>
        {
            headers.insert("grpc-status", HeaderValue::from_static("3"));
            intake.bad_request(&message);
        }
        Some("11") if message.contains("too large") => {
            headers.insert("grpc-status", HeaderValue::from_static("8"));
            let text = too_large();
            if let Ok(v) = HeaderValue::from_str(&text) {
                headers.insert("grpc-message", v);
            }
            intake.bad_request(&text);
        }
        Some("8") if message.contains("exceeded while decompressing") => {
            let text = format!("{} once decompressed", too_large());
            if let Ok(v) = HeaderValue::from_str(&text) {
                headers.insert("grpc-message", v);
            }
            intake.bad_request(&text);
        }
        _ => {}
    }
    res
}

/// The three services over one intake.
#[derive(Clone)]
pub struct Services {
    intake: Arc<Intake>,
}

impl Services {
    /// Services feeding `intake`.
    pub fn new(intake: Arc<Intake>) -> Self {
        Services { intake }
    }

    /// The router serving all three.
    pub fn router(self) -> tonic::service::Routes {
        let max = self.intake.max_body;
        tonic::service::Routes::new(RawServer::<Traces>::new(self.clone(), max))
            .add_service(RawServer::<Logs>::new(self.clone(), max))
            .add_service(RawServer::<Metrics>::new(self, max))
    }

    /// One export request of `signal`, its message still encoded: checked,
    /// logged raw (durable acknowledgements), decoded, converted and
    /// taken; the response encoded, or the status to answer.
    pub async fn export(
        &self,
        signal: Signal,
        req: Request<bytes::Bytes>,
    ) -> Result<Response<Vec<u8>>, Status> {
        self.admit(&req)?;
        let body = req.into_inner();
        let arrival_us = endpoint::epoch_us();
        let logged = self
            .intake
            .log_raw(signal, Encoding::Protobuf, arrival_us, &body);
        let ctx = self.intake.context_at(arrival_us);
        let converted = match otlp::decode_and_convert(signal, &body, Encoding::Protobuf, &ctx) {
            Ok(c) => c,
            Err(e) => {
                self.intake.bad_request(&e);
                return Err(if e.is_too_large() {
                    Status::resource_exhausted(e.to_string())
                } else {
                    Status::invalid_argument(e.to_string())
                });
            }
        };
        let (rejected, message) = answer(self.intake.take(converted, logged).await)?;
        Ok(Response::new(response(signal, rejected, message)))
    }

    /// Checks the token and the queue; `Err` is the status to answer.
    fn admit<T>(&self, req: &Request<T>) -> Result<(), Status> {
        let auth = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if !self.intake.authorized(auth) {
            let why = "missing or wrong token (authorization: Bearer <token>)";
            self.intake.bad_request(&why);
            return Err(Status::unauthenticated(why));
        }
        match self.intake.busy() {
            Some(o) => Err(unavailable(&o)),
            None => Ok(()),
        }
    }
}

fn unavailable(o: &Outcome) -> Status {
    Status::unavailable(super::intake::retry_message(o))
}

/// `(rejected, message)` of an accepted request, or the status to answer.
fn answer(o: Outcome) -> Result<(i64, String), Status> {
    match o {
        Outcome::Accepted { rejected, message } => {
            Ok((i64::try_from(rejected).unwrap_or(i64::MAX), message))
        }
        o => Err(unavailable(&o)),
    }
}

/// The encoded response to an accepted request of `signal`.
fn response(signal: Signal, rejected: i64, message: String) -> Vec<u8> {
    let partial = rejected > 0;
    match signal {
        Signal::Traces => ExportTraceServiceResponse {
            partial_success: partial.then_some(ExportTracePartialSuccess {
                rejected_spans: rejected,
                error_message: message,
            }),
        }
        .encode_to_vec(),
        Signal::Logs => ExportLogsServiceResponse {
            partial_success: partial.then_some(ExportLogsPartialSuccess {
                rejected_log_records: rejected,
                error_message: message,
            }),
        }
        .encode_to_vec(),
        Signal::Metrics => ExportMetricsServiceResponse {
            partial_success: partial.then_some(ExportMetricsPartialSuccess {
                rejected_data_points: rejected,
                error_message: message,
            }),
        }
        .encode_to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::Counters;
    use tonic::Code;

    #[tokio::test]
    async fn a_full_queue_answers_unavailable() {
        let (intake, counters, rx) = super::super::intake::testing::full_intake();
        let svc = Services::new(intake);
        let req = || Request::new(bytes::Bytes::new());
        let e = svc.export(Signal::Logs, req()).await.expect_err("busy");
        assert_eq!(e.code(), Code::Unavailable);
        let _ = rx.try_recv();
        let r = svc.export(Signal::Logs, req()).await.expect("room again");
        let r = ExportLogsServiceResponse::decode(&r.into_inner()[..]).expect("response");
        assert_eq!(r.partial_success, None);
        // A message that does not decode is refused as invalid, alone.
        let bad = Request::new(bytes::Bytes::from_static(&[0xff, 0xff, 0xff]));
        let e = svc.export(Signal::Logs, bad).await.expect_err("bad");
        assert_eq!(e.code(), Code::InvalidArgument);
        assert_eq!(Counters::get(&counters.otlp_throttled), 1);
        counters
            .recv
            .ingest_stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let e = svc.export(Signal::Logs, req()).await.expect_err("stopped");
        assert_eq!(e.code(), Code::Unavailable);
        assert!(e.message().contains("shutting down"));
    }
}
