//! The last step of every chunk encoder: zstd at one level, and the choice
//! between an encoder's columns, zstd over the payload as it is, and
//! storing the payload. Encoders differ only in how they build columns
//! (`encode.rs`, and the old transform in `reference.rs`), so the choice is
//! written once here and the two are compared on their transforms alone.

use super::Codec;

/// zstd at one level (or none), with the body choice of `mod.rs`.
pub(crate) struct Packer {
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl Packer {
    /// A packer compressing at zstd `level`; `None` stores payloads as
    /// they are.
    pub(crate) fn new(level: Option<i32>) -> Self {
        let zstd = level.and_then(|l| match zstd::bulk::Compressor::new(l) {
            Ok(c) => Some(c),
            Err(e) => {
                log::error!("zstd level {l} unavailable ({e}); chunks are stored uncompressed");
                None
            }
        });
        Packer { zstd }
    }

    /// Whether bodies are compressed at all (columns are worth building).
    pub(crate) fn compresses(&self) -> bool {
        self.zstd.is_some()
    }

    /// Appends the body of a chunk to `out`; returns its codec: the
    /// columns `cols` (when the transform parsed the payload) if they fit
    /// in the payload's size (the decoder allocates no more) and compress,
    /// else zstd over the payload as it is, else [`Codec::Stored`] when
    /// neither makes it smaller.
    pub(crate) fn pack(&mut self, payload: &[u8], cols: Option<&[u8]>, out: &mut Vec<u8>) -> Codec {
        if self.zstd.is_none() {
            out.extend_from_slice(payload);
            return Codec::Stored;
        }
        if let Some(cols) = cols.filter(|c| c.len() <= payload.len()) {
            if self.compress(cols, payload.len(), out) {
                return Codec::Columns;
            }
        }
        if self.compress(payload, payload.len(), out) {
            return Codec::Zstd;
        }
        out.extend_from_slice(payload);
        Codec::Stored
    }

    /// Appends zstd of `src` to `out` if it is smaller than `limit` bytes
    /// (the body may not be larger than the payload: storing wins then).
    fn compress(&mut self, src: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
        let Some(z) = self.zstd.as_mut() else {
            return false;
        };
        let start = out.len();
        match super::append_in_spare_room(out, limit, |dst| z.compress_to_buffer(src, dst)) {
            Ok(n) if n < limit => true,
            Ok(_) => {
                out.truncate(start);
                false
            }
            Err(_) => false,
        }
    }
}
