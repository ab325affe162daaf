//! The chunk encoder's entry points for `make encode-bench`
//! (`crates/loom/examples/encode_bench.rs`): the current encoder and the
//! reference (pre-transpose) one side by side over the same payloads, plus
//! the decoder to check both. Not a stable API.

use super::reference::ReferenceEncoder;
use super::{decode as decode_body, Codec, Encoder};
use crate::log::record::encode as encode_record;

/// A chunk's records as the log holds them.
pub struct Payload {
    /// `varint(ts delta) varint(len) bytes` per record.
    pub bytes: Vec<u8>,
    /// The first record's time.
    pub first_ts: u64,
    /// Records in it.
    pub count: u32,
}

impl Payload {
    /// The payload of `records` (time, bytes), in order; times must not
    /// decrease.
    pub fn new<'a>(records: impl IntoIterator<Item = (u64, &'a [u8])>) -> Payload {
        let mut bytes = Vec::new();
        let mut first_ts = None;
        let (mut prev, mut count) = (0u64, 0u32);
        let mut buf = Vec::new();
        for (ts, rec) in records {
            let first = *first_ts.get_or_insert(ts);
            if count == 0 {
                prev = first;
            }
            buf.resize(rec.len() + 20, 0);
            let n = encode_record(&mut buf, ts.saturating_sub(prev), rec);
            bytes.extend_from_slice(&buf[..n]);
            prev = prev.max(ts);
            count += 1;
        }
        Payload {
            bytes,
            first_ts: first_ts.unwrap_or(0),
            count,
        }
    }
}

/// The two encoders, each at the same zstd level.
pub struct Encoders {
    current: Encoder,
    reference: ReferenceEncoder,
}

impl Encoders {
    /// Both encoders at zstd `level`.
    pub fn new(level: i32) -> Encoders {
        Encoders {
            current: Encoder::new(Some(level)),
            reference: ReferenceEncoder::new(Some(level)),
        }
    }

    /// The current encoder's columns (no zstd); `None` if it does not parse.
    pub fn columns(&mut self, p: &Payload) -> Option<&[u8]> {
        self.current.columns_only(&p.bytes, p.first_ts, p.count)
    }

    /// The reference encoder's columns (no zstd).
    pub fn reference_columns(&mut self, p: &Payload) -> Option<&[u8]> {
        self.reference.columns_only(&p.bytes, p.first_ts, p.count)
    }

    /// The current encoder's frame body appended to `out`; its codec byte.
    pub fn encode(&mut self, p: &Payload, out: &mut Vec<u8>) -> u8 {
        self.current.encode(&p.bytes, p.first_ts, p.count, out) as u8
    }

    /// The reference encoder's frame body appended to `out`; its codec byte.
    pub fn reference_encode(&mut self, p: &Payload, out: &mut Vec<u8>) -> u8 {
        self.reference.encode(&p.bytes, p.first_ts, p.count, out) as u8
    }
}

/// Decodes a frame body made by either encoder back to the payload bytes.
pub fn decode(codec: u8, body: &[u8], p: &Payload) -> Result<Vec<u8>, String> {
    let codec = Codec::from_byte(codec).ok_or_else(|| format!("unknown codec {codec}"))?;
    decode_body(codec, body, p.bytes.len(), p.count)
}
