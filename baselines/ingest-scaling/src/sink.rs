//! One writer per store, all behind [`Sink`] so the timed loop in
//! [`crate::run()`] is the same code for every store.

pub mod file;
pub mod lmdb;
pub mod loom;
pub mod rocksdb;

use anyhow::Result;

/// Where a writer thread puts its records.
pub trait Sink {
    /// Appends one record stamped `ts_us` (µs since the run started) with `payload`.
    fn write(&mut self, ts_us: u64, payload: &[u8]) -> Result<()>;

    /// Publishes every record written so far (the store's equivalent of
    /// `loom::Writer::sync`); called at least once a second and once at the end.
    fn sync(&mut self) -> Result<()>;
}

/// Builds `ts (8 B, big-endian) + payload`, the value stored per record in the
/// key-value stores, rebuilt in place per record (no allocation).
#[derive(Debug)]
pub(crate) struct ValueBuf {
    buf: Vec<u8>,
}

impl ValueBuf {
    /// An empty buffer; [`ValueBuf::fill`] sizes it.
    pub(crate) fn new() -> Self {
        ValueBuf { buf: Vec::new() }
    }

    /// The value for one record.
    #[inline]
    pub(crate) fn fill(&mut self, ts_us: u64, payload: &[u8]) -> &[u8] {
        if self.buf.len() != 8 + payload.len() {
            self.buf.clear();
            self.buf.extend_from_slice(&ts_us.to_be_bytes());
            self.buf.extend_from_slice(payload);
        } else {
            // Every record's payload differs (its value): copy it each time.
            self.buf[..8].copy_from_slice(&ts_us.to_be_bytes());
            self.buf[8..].copy_from_slice(payload);
        }
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::ValueBuf;

    #[test]
    fn value_is_timestamp_then_payload() {
        let mut v = ValueBuf::new();
        assert_eq!(v.fill(1, b"ab"), &[0, 0, 0, 0, 0, 0, 0, 1, b'a', b'b']);
        assert_eq!(v.fill(2, b"cd"), &[0, 0, 0, 0, 0, 0, 0, 2, b'c', b'd']);
    }
}
