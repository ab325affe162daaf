//! Application key-value operations (`KvOp`): what a workload records per
//! get or put.

use super::{check_len, u32_at, u64_at, Kind};
use crate::DecodeError;

/// Key-value operation kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KvOpKind {
    /// A read (get).
    Read,
    /// A write (put/delete).
    Write,
}

/// One application key-value operation.
///
/// Encoding (24 bytes, little endian):
/// `thread_id u32 | op u8 (0 = read, 1 = write) | 3 reserved zero bytes |
///  start_us u64 | duration_us u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KvOp {
    /// Thread that issued the operation.
    pub thread_id: u32,
    /// Read or write.
    pub op: KvOpKind,
    /// Start of the operation, µs (clock chosen by the producer).
    pub start_us: u64,
    /// Duration of the operation in µs.
    pub duration_us: u64,
}

impl KvOp {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 24;

    /// Appends the 24-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.thread_id.to_le_bytes());
        out.push(match self.op {
            KvOpKind::Read => 0,
            KvOpKind::Write => 1,
        });
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&self.start_us.to_le_bytes());
        out.extend_from_slice(&self.duration_us.to_le_bytes());
    }

    /// Checks that `b` is a valid encoding (exactly [`Self::ENCODED_LEN`]
    /// bytes, a known op, zero reserved bytes) without building the record:
    /// [`Self::decode`] accepts exactly the bytes this accepts, with the
    /// same errors. Receivers check every KV op of every frame, so this
    /// stays a few inlined loads.
    #[inline]
    pub fn check(b: &[u8]) -> Result<(), DecodeError> {
        check_len(Kind::KvOp, b)?;
        if b[4] > 1 {
            return Err(DecodeError::BadField {
                kind: "kv",
                field: "op",
                value: u64::from(b[4]),
            });
        }
        if b[5..8] != [0, 0, 0] {
            // Reserved bytes must be zero, so every record has one encoding.
            return Err(DecodeError::BadField {
                kind: "kv",
                field: "reserved",
                value: u64::from(b[5]) | u64::from(b[6]) << 8 | u64::from(b[7]) << 16,
            });
        }
        Ok(())
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<KvOp, DecodeError> {
        Self::check(b)?;
        Ok(KvOp {
            thread_id: u32_at(b, 0),
            op: if b[4] == 0 {
                KvOpKind::Read
            } else {
                KvOpKind::Write
            },
            start_us: u64_at(b, 8),
            duration_us: u64_at(b, 16),
        })
    }

    /// Index value of an encoded KV op: its duration in µs (0 if `b` is short).
    pub fn index_value(b: &[u8]) -> u64 {
        u64_at(b, 16)
    }
}
