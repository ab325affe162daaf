//! The OTLP/gRPC export services with the request message kept as bytes:
//! a codec that hands the (decompressed, size-checked) message over
//! undecoded, so the handler can log it in the intake log before decoding
//! it (see `raw.rs`), and one server per service for it, as tonic's
//! generated servers are, but over that codec (they decode with prost
//! before the handler runs). The response is encoded by the handler.

use std::convert::Infallible;
use std::marker::PhantomData;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes};
use otlp::Signal;
use tonic::body::Body;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::BoxFuture;
use tonic::server::{NamedService, UnaryService};
use tonic::Status;

use super::grpc::Services;

/// Messages in as bytes, responses out as bytes encoded by the handler.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

/// See [`RawCodec`].
#[derive(Debug)]
pub struct RawEncoder;

/// See [`RawCodec`].
#[derive(Debug)]
pub struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Bytes;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        let n = src.remaining();
        Ok(Some(src.copy_to_bytes(n)))
    }
}

/// One OTLP export service: its gRPC name and what it exports.
pub trait Export: Send + Sync + 'static {
    /// The service's full name.
    const NAME: &'static str;
    /// What it exports.
    const SIGNAL: Signal;
}

/// `TraceService`.
pub struct Traces;
/// `LogsService`.
pub struct Logs;
/// `MetricsService`.
pub struct Metrics;

impl Export for Traces {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
    const SIGNAL: Signal = Signal::Traces;
}

impl Export for Logs {
    const NAME: &'static str = "opentelemetry.proto.collector.logs.v1.LogsService";
    const SIGNAL: Signal = Signal::Logs;
}

impl Export for Metrics {
    const NAME: &'static str = "opentelemetry.proto.collector.metrics.v1.MetricsService";
    const SIGNAL: Signal = Signal::Metrics;
}

/// The server of export service `K` (its one method, `Export`).
pub struct RawServer<K> {
    services: Services,
    max_body: usize,
    kind: PhantomData<fn() -> K>,
}

impl<K> RawServer<K> {
    /// Serves `services`, messages of at most `max_body` bytes.
    pub fn new(services: Services, max_body: usize) -> Self {
        RawServer {
            services,
            max_body,
            kind: PhantomData,
        }
    }
}

impl<K> Clone for RawServer<K> {
    fn clone(&self) -> Self {
        RawServer::new(self.services.clone(), self.max_body)
    }
}

impl<K: Export> NamedService for RawServer<K> {
    const NAME: &'static str = K::NAME;
}

/// The `Export` method of service `K`.
struct ExportMethod<K> {
    services: Services,
    kind: PhantomData<fn() -> K>,
}

impl<K: Export> UnaryService<Bytes> for ExportMethod<K> {
    type Response = Vec<u8>;
    type Future = BoxFuture<tonic::Response<Vec<u8>>, Status>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let services = self.services.clone();
        Box::pin(async move { services.export(K::SIGNAL, request).await })
    }
}

impl<K: Export> tower::Service<axum::http::Request<Body>> for RawServer<K> {
    type Response = axum::http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::http::Request<Body>) -> Self::Future {
        let export = req
            .uri()
            .path()
            .strip_prefix('/')
            .and_then(|p| p.strip_prefix(K::NAME))
            == Some("/Export");
        if !export {
            return Box::pin(async move {
                let mut response = axum::http::Response::new(Body::default());
                let headers = response.headers_mut();
                headers.insert(
                    Status::GRPC_STATUS,
                    (tonic::Code::Unimplemented as i32).into(),
                );
                headers.insert(
                    axum::http::header::CONTENT_TYPE,
                    tonic::metadata::GRPC_CONTENT_TYPE,
                );
                Ok(response)
            });
        }
        let method = ExportMethod::<K> {
            services: self.services.clone(),
            kind: PhantomData,
        };
        let max = self.max_body;
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(RawCodec)
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(max);
            Ok(grpc.unary(method, req).await)
        })
    }
}
