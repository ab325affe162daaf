//! Version-1 frames: data only, 28-byte header (recordings, `tcp-replay`).

use std::io::Write;

use super::{FRAME_HEADER_LEN, FRAME_MAGIC, FRAME_VERSION};
use crate::batch::Batch;
use crate::WireError;

/// Appends the complete frame for `batch` to `out`.
///
/// Panics never; a batch whose payload exceeds `u32::MAX` bytes or whose
/// record count exceeds `u32::MAX` gives `PayloadTooLarge`.
pub fn encode_frame(batch: &Batch, out: &mut Vec<u8>) -> Result<(), WireError> {
    let payload_len = batch.payload_len();
    if payload_len > u32::MAX as usize || batch.records.len() > u32::MAX as usize {
        return Err(WireError::PayloadTooLarge {
            len: payload_len as u64,
            max: u64::from(u32::MAX),
        });
    }
    let start = out.len();
    put_header(
        out,
        batch.records.len() as u32,
        payload_len as u32,
        batch.arrival_us,
    );
    batch.encode_payload_into(out);
    seal_frame(out, start);
    Ok(())
}

/// Appends a frame whose payload is already encoded: `payload` must hold
/// exactly `record_count` tagged records (see [`crate::batch`]); it is not
/// checked here (receivers check it). A sender that keeps payloads in wire
/// form frames them with one copy and a checksum, without re-encoding.
pub fn encode_frame_payload(
    record_count: u32,
    arrival_us: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    encode_frame_payload_with(record_count, arrival_us, payload, out, |_| {})
}

/// Like [`encode_frame_payload`], but `edit` may change the copied payload
/// in place before the checksum is computed (e.g. shift event times with
/// [`crate::raw::shift_event_time`]); it must keep the records' layout.
pub fn encode_frame_payload_with(
    record_count: u32,
    arrival_us: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
    edit: impl FnOnce(&mut [u8]),
) -> Result<(), WireError> {
    let payload_len = u32::try_from(payload.len()).map_err(|_| WireError::PayloadTooLarge {
        len: payload.len() as u64,
        max: u64::from(u32::MAX),
    })?;
    let start = out.len();
    put_header(out, record_count, payload_len, arrival_us);
    out.extend_from_slice(payload);
    edit(&mut out[start + FRAME_HEADER_LEN..]);
    seal_frame(out, start);
    Ok(())
}

/// Appends a frame header with a zero checksum (filled by [`seal_frame`]).
fn put_header(out: &mut Vec<u8>, record_count: u32, payload_len: u32, arrival_us: u64) {
    out.extend_from_slice(&FRAME_MAGIC);
    out.extend_from_slice(&FRAME_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&record_count.to_le_bytes());
    out.extend_from_slice(&payload_len.to_le_bytes());
    out.extend_from_slice(&arrival_us.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
}

/// Writes the checksum of the frame that starts at `start` and runs to the
/// end of `out`.
fn seal_frame(out: &mut [u8], start: usize) {
    let crc = crc32c::crc32c_append(
        crc32c::crc32c(&out[start..start + 24]),
        &out[start + FRAME_HEADER_LEN..],
    );
    out[start + 24..start + 28].copy_from_slice(&crc.to_le_bytes());
}

/// Writes batches as frames to a byte stream.
pub struct FrameWriter<W> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: Write> FrameWriter<W> {
    /// Wraps a stream.
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner,
            buf: Vec::new(),
        }
    }

    /// Encodes and writes one frame (one `write_all` call).
    pub fn write_batch(&mut self, batch: &Batch) -> Result<(), WireError> {
        self.buf.clear();
        encode_frame(batch, &mut self.buf)?;
        self.inner.write_all(&self.buf).map_err(|e| WireError::Io {
            context: "writing a frame",
            source: e,
        })
    }

    /// Flushes the stream.
    pub fn flush(&mut self) -> Result<(), WireError> {
        self.inner.flush().map_err(|e| WireError::Io {
            context: "flushing frames",
            source: e,
        })
    }

    /// The underlying stream.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }
}
