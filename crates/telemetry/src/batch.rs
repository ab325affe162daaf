//! Batches of records and their payload encoding (shared by wire frames and
//! recording files).
//!
//! Payload: the records back to back, each as one kind tag byte
//! ([`Kind`] as `u8`) followed by the kind's fixed-size encoding. The record
//! count is carried by the enclosing frame or block, and a payload must hold
//! exactly that many records with no trailing bytes.

use crate::record::{Kind, Record};
use crate::DecodeError;

/// Smallest encoded record including its tag byte; bounds record counts.
pub const MIN_TAGGED_RECORD_LEN: usize = 1 + crate::record::KvOp::ENCODED_LEN;

/// A group of records sent or recorded together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Batch {
    /// When the batch arrived (or was emitted), µs since the start of the
    /// recording or stream.
    pub arrival_us: u64,
    /// The records, in emission order.
    pub records: Vec<Record>,
}

impl Batch {
    /// Creates a batch.
    pub fn new(arrival_us: u64, records: Vec<Record>) -> Batch {
        Batch {
            arrival_us,
            records,
        }
    }

    /// Encoded payload length in bytes.
    pub fn payload_len(&self) -> usize {
        self.records
            .iter()
            .map(|r| 1 + r.kind().encoded_len())
            .sum()
    }

    /// Appends the payload encoding to `out`.
    pub fn encode_payload_into(&self, out: &mut Vec<u8>) {
        out.reserve(self.payload_len());
        for r in &self.records {
            out.push(r.kind() as u8);
            r.encode_into(out);
        }
    }
}

/// Decodes a payload that must hold exactly `count` records, appending them to
/// `out` (which is cleared first).
pub fn decode_payload_into(
    payload: &[u8],
    count: u32,
    out: &mut Vec<Record>,
) -> Result<(), DecodeError> {
    out.clear();
    if (count as usize).saturating_mul(MIN_TAGGED_RECORD_LEN) > payload.len() {
        return Err(DecodeError::CountTooLarge {
            declared: count,
            payload_len: payload.len(),
        });
    }
    out.reserve(count as usize);
    let mut off = 0usize;
    for index in 0..count {
        let tag = *payload
            .get(off)
            .ok_or(DecodeError::TruncatedRecord { index, offset: off })?;
        let kind = Kind::from_tag(tag).ok_or(DecodeError::UnknownKind { tag, offset: off })?;
        let end = off + 1 + kind.encoded_len();
        let body = payload
            .get(off + 1..end)
            .ok_or(DecodeError::TruncatedRecord { index, offset: off })?;
        out.push(Record::decode(kind, body)?);
        off = end;
    }
    if off != payload.len() {
        return Err(DecodeError::TrailingBytes {
            declared: count,
            extra: payload.len() - off,
        });
    }
    Ok(())
}

/// Decodes a payload that must hold exactly `count` records.
pub fn decode_payload(payload: &[u8], count: u32) -> Result<Vec<Record>, DecodeError> {
    let mut v = Vec::new();
    decode_payload_into(payload, count, &mut v)?;
    Ok(v)
}
