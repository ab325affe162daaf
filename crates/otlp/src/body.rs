//! Request bodies into export requests: protobuf or OTLP/JSON, optionally
//! gzip-compressed, each bounded in size.
//!
//! Unknown fields are skipped, as protobuf and the OTLP/JSON rules require
//! of receivers (a newer client's additions must not fail the request).

use std::io::Read;

use flate2::read::{GzDecoder, ZlibDecoder};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

use crate::error::{Error, Result};

/// How a body is encoded (OTLP/HTTP's two content types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`.
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names (parameters such as `charset`
    /// ignored); `None` for any other type.
    pub fn from_content_type(ct: &str) -> Option<Encoding> {
        let essence = ct.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("application/x-protobuf") {
            Some(Encoding::Protobuf)
        } else if essence.eq_ignore_ascii_case("application/json") {
            Some(Encoding::Json)
        } else {
            None
        }
    }

    /// The `Content-Type` of this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// An export request message this crate decodes.
pub trait Request: prost::Message + Default + serde::de::DeserializeOwned {
    /// The message's name, for errors.
    const NAME: &'static str;
}

impl Request for ExportTraceServiceRequest {
    const NAME: &'static str = "ExportTraceServiceRequest";
}

impl Request for ExportLogsServiceRequest {
    const NAME: &'static str = "ExportLogsServiceRequest";
}

impl Request for ExportMetricsServiceRequest {
    const NAME: &'static str = "ExportMetricsServiceRequest";
}

/// Decodes an (uncompressed) body.
pub fn decode<R: Request>(bytes: &[u8], encoding: Encoding) -> Result<R> {
    match encoding {
        Encoding::Protobuf => R::decode(bytes).map_err(|source| Error::Protobuf {
            what: R::NAME,
            source,
        }),
        Encoding::Json => serde_json::from_slice(bytes).map_err(|source| Error::Json {
            what: R::NAME,
            source,
        }),
    }
}

/// Decompresses a gzip body, refusing output beyond `limit` bytes (a small
/// body must not expand into gigabytes).
pub fn gunzip(bytes: &[u8], limit: usize) -> Result<Vec<u8>> {
    bounded(GzDecoder::new(bytes), bytes.len(), limit)
}

/// Decompresses a `deflate` (zlib) body, refusing output beyond `limit`
/// bytes.
pub fn inflate(bytes: &[u8], limit: usize) -> Result<Vec<u8>> {
    bounded(ZlibDecoder::new(bytes), bytes.len(), limit)
}

fn bounded(r: impl Read, len: usize, limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(len.saturating_mul(4).min(limit));
    r.take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(Error::Gzip)?;
    if out.len() > limit {
        return Err(Error::TooLarge { limit });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use prost::Message;
    use std::io::Write;

    #[test]
    fn content_types_and_gzip_limits() {
        assert_eq!(
            Encoding::from_content_type("application/json; charset=utf-8"),
            Some(Encoding::Json)
        );
        assert_eq!(
            Encoding::from_content_type("Application/X-Protobuf"),
            Some(Encoding::Protobuf)
        );
        assert_eq!(Encoding::from_content_type("text/plain"), None);
        let mut z = GzEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&vec![b'x'; 10_000]).expect("gzip");
        let z = z.finish().expect("gzip");
        assert_eq!(gunzip(&z, 10_000).expect("fits").len(), 10_000);
        assert!(gunzip(&z, 9_999).expect_err("too large").is_too_large());
        assert!(matches!(gunzip(b"not gzip", 100), Err(Error::Gzip(_))));
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"hello").expect("zlib");
        let z = z.finish().expect("zlib");
        assert_eq!(inflate(&z, 5).expect("fits"), b"hello");
        assert!(inflate(&z, 4).expect_err("too large").is_too_large());
    }

    #[test]
    fn bad_bodies_are_errors_and_unknown_fields_are_skipped() {
        let e = decode::<ExportTraceServiceRequest>(&[0x0a, 0x05, 1], Encoding::Protobuf)
            .expect_err("truncated");
        assert!(e
            .to_string()
            .contains("malformed protobuf ExportTraceServiceRequest"));
        let e = decode::<ExportTraceServiceRequest>(b"{\"resourceSpans\": 3}", Encoding::Json)
            .expect_err("wrong type");
        assert!(e.to_string().contains("malformed JSON"), "{e}");
        // Field 99 (varint) is unknown to this version: skipped.
        let mut body = ExportTraceServiceRequest::default().encode_to_vec();
        body.extend_from_slice(&[0x98, 0x06, 0x01]);
        assert!(decode::<ExportTraceServiceRequest>(&body, Encoding::Protobuf).is_ok());
        let r: ExportTraceServiceRequest = decode(
            b"{\"resourceSpans\": [], \"someFutureField\": {\"x\": [1]}}",
            Encoding::Json,
        )
        .expect("unknown JSON field skipped");
        assert!(r.resource_spans.is_empty());
    }
}
