//! Sending pre-encoded export requests to loom-app over OTLP/gRPC: one
//! HTTP/2 connection per client, one request in flight per client (as an
//! SDK's batch processor sends), UNAVAILABLE retried after a pause.

use std::time::{Duration, Instant};

use bytes::{Buf, BufMut};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

/// Pause before retrying a request loom-app answered UNAVAILABLE.
const RETRY_PAUSE: Duration = Duration::from_millis(5);

/// Already-encoded bodies in, raw bytes out.
#[derive(Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = bytes::Bytes;
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
    type Item = bytes::Bytes;
    type Error = Status;
    fn encode(&mut self, item: bytes::Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let v = src.chunk().to_vec();
        src.advance(v.len());
        Ok(Some(v))
    }
}

/// What one client saw.
#[derive(Default, Debug, Clone)]
pub struct Sent {
    pub spans: u64,
    pub rejected: u64,
    pub retries: u64,
    pub seconds: f64,
    /// Per request: from sending it (the first time) to its success, µs.
    pub ack_us: Vec<u64>,
}

/// Sends `bodies` (each of `spans[i]` spans) in order; returns when every
/// one was accepted.
pub async fn send(addr: &str, bodies: Vec<(bytes::Bytes, u64)>) -> Result<Sent, String> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let mut grpc = tonic::client::Grpc::new(channel);
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    );
    let mut out = Sent::default();
    let start = Instant::now();
    for (body, n) in bodies {
        let sent_at = Instant::now();
        loop {
            grpc.ready().await.map_err(|e| e.to_string())?;
            match grpc
                .unary(tonic::Request::new(body.clone()), path.clone(), Raw)
                .await
            {
                Ok(r) => {
                    let resp = ExportTraceServiceResponse::decode(&r.into_inner()[..])
                        .map_err(|e| format!("response: {e}"))?;
                    let rejected = resp
                        .partial_success
                        .map_or(0, |p| p.rejected_spans.max(0) as u64);
                    out.rejected += rejected;
                    out.spans += n - rejected;
                    out.ack_us.push(sent_at.elapsed().as_micros() as u64);
                    break;
                }
                Err(s) if s.code() == Code::Unavailable => {
                    out.retries += 1;
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Err(s) => return Err(format!("export failed: {s}")),
            }
        }
    }
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}
