//! TCP wire format: a stream of self-delimiting frames, one batch each.
//!
//! Frame layout (all integers little endian):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | magic `b"LMTF"` |
//! | 4 | 2 | version, currently 1 |
//! | 6 | 2 | flags, must be 0 |
//! | 8 | 4 | record count |
//! | 12 | 4 | payload length in bytes |
//! | 16 | 8 | batch arrival time, µs |
//! | 24 | 4 | CRC32C of header bytes 0..24 followed by the payload |
//! | 28 | n | payload (see [`crate::batch`]) |
//!
//! The receiver checks, in order: magic, version, flags, payload length
//! against its bound ([`DEFAULT_MAX_PAYLOAD`] unless configured), the
//! checksum, then that the payload decodes to exactly the declared number of
//! records. Any failure is a [`WireError`]; the receiver then closes that
//! connection (frames cannot be resynchronised safely). A clean end of stream
//! exactly at a frame boundary is not an error.

use std::io::{BufReader, ErrorKind, Read, Write};

use crate::batch::{decode_payload_into, Batch};
use crate::raw::validate_payload;
use crate::WireError;

/// Frame magic.
pub const FRAME_MAGIC: [u8; 4] = *b"LMTF";
/// Frame format version written and accepted.
pub const FRAME_VERSION: u16 = 1;
/// Frame header size in bytes.
pub const FRAME_HEADER_LEN: usize = 28;
/// Default bound on a frame's payload length (16 MiB).
pub const DEFAULT_MAX_PAYLOAD: usize = 16 << 20;

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

/// Parsed and validated frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Declared record count.
    pub record_count: u32,
    /// Declared payload length in bytes.
    pub payload_len: u32,
    /// Batch arrival time, µs.
    pub arrival_us: u64,
    /// Stored checksum.
    pub crc: u32,
}

/// Validates the fixed header (magic, version, flags, payload bound).
pub fn parse_header(
    h: &[u8; FRAME_HEADER_LEN],
    max_payload: usize,
) -> Result<FrameHeader, WireError> {
    let mut magic = [0u8; 4];
    magic.copy_from_slice(&h[0..4]);
    if magic != FRAME_MAGIC {
        return Err(WireError::BadMagic {
            found: magic,
            expected: FRAME_MAGIC,
        });
    }
    let version = u16::from_le_bytes([h[4], h[5]]);
    if version != FRAME_VERSION {
        return Err(WireError::UnsupportedVersion {
            found: version,
            supported: FRAME_VERSION,
        });
    }
    let flags = u16::from_le_bytes([h[6], h[7]]);
    if flags != 0 {
        return Err(WireError::BadFlags(flags));
    }
    let record_count = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    let payload_len = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
    if payload_len as usize > max_payload {
        return Err(WireError::PayloadTooLarge {
            len: u64::from(payload_len),
            max: max_payload as u64,
        });
    }
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&h[16..24]);
    let crc = u32::from_le_bytes([h[24], h[25], h[26], h[27]]);
    Ok(FrameHeader {
        record_count,
        payload_len,
        arrival_us: u64::from_le_bytes(ts),
        crc,
    })
}

fn check_crc(header_bytes: &[u8], header: &FrameHeader, payload: &[u8]) -> Result<(), WireError> {
    let computed = crc32c::crc32c_append(crc32c::crc32c(&header_bytes[0..24]), payload);
    if computed != header.crc {
        return Err(WireError::ChecksumMismatch {
            stored: header.crc,
            computed,
        });
    }
    Ok(())
}

fn check_and_decode(
    header_bytes: &[u8],
    header: &FrameHeader,
    payload: &[u8],
    out: &mut Batch,
) -> Result<(), WireError> {
    check_crc(header_bytes, header, payload)?;
    out.arrival_us = header.arrival_us;
    decode_payload_into(payload, header.record_count, &mut out.records)?;
    Ok(())
}

/// Decodes one frame from the start of `buf`, returning the batch and the
/// number of bytes consumed. Never panics; incomplete input gives `Truncated`.
pub fn decode_frame(buf: &[u8], max_payload: usize) -> Result<(Batch, usize), WireError> {
    let hb: &[u8; FRAME_HEADER_LEN] = buf
        .get(..FRAME_HEADER_LEN)
        .and_then(|s| s.try_into().ok())
        .ok_or(WireError::Truncated {
            needed: FRAME_HEADER_LEN,
            got: buf.len(),
        })?;
    let header = parse_header(hb, max_payload)?;
    let end = FRAME_HEADER_LEN + header.payload_len as usize;
    let payload = buf.get(FRAME_HEADER_LEN..end).ok_or(WireError::Truncated {
        needed: end,
        got: buf.len(),
    })?;
    let mut batch = Batch::default();
    check_and_decode(hb, &header, payload, &mut batch)?;
    Ok((batch, end))
}

/// Reads the stream until `buf` is full. Returns the number of bytes read,
/// which is less than `buf.len()` only at end of stream.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, WireError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(WireError::Io {
                    context: "reading a frame",
                    source: e,
                })
            }
        }
    }
    Ok(got)
}

/// Reads and validates frames from a byte stream (e.g. a `TcpStream`).
pub struct FrameReader<R> {
    inner: R,
    max_payload: usize,
    payload: Vec<u8>,
}

impl<R: Read> FrameReader<R> {
    /// A reader accepting payloads up to [`DEFAULT_MAX_PAYLOAD`] bytes.
    pub fn new(inner: R) -> Self {
        Self::with_max_payload(inner, DEFAULT_MAX_PAYLOAD)
    }

    /// A reader accepting payloads up to `max_payload` bytes.
    pub fn with_max_payload(inner: R, max_payload: usize) -> Self {
        FrameReader {
            inner,
            max_payload,
            payload: Vec::new(),
        }
    }

    /// Reads the next frame into `out` (reusing its allocation).
    ///
    /// Returns `Ok(false)` on a clean end of stream at a frame boundary,
    /// `Ok(true)` when `out` holds a new batch, and an error for anything
    /// else; after an error the stream position is undefined and the caller
    /// should drop the connection.
    pub fn read_into(&mut self, out: &mut Batch) -> Result<bool, WireError> {
        let mut hb = [0u8; FRAME_HEADER_LEN];
        let got = read_full(&mut self.inner, &mut hb)?;
        if got == 0 {
            return Ok(false);
        }
        if got < FRAME_HEADER_LEN {
            return Err(WireError::Truncated {
                needed: FRAME_HEADER_LEN,
                got,
            });
        }
        let header = parse_header(&hb, self.max_payload)?;
        let n = header.payload_len as usize;
        self.payload.resize(n, 0);
        let got = read_full(&mut self.inner, &mut self.payload[..n])?;
        if got < n {
            return Err(WireError::Truncated { needed: n, got });
        }
        check_and_decode(&hb, &header, &self.payload[..n], out)?;
        Ok(true)
    }

    /// Reads the next frame and appends its payload to `out` once it is
    /// checked (checksum, and every record valid, as [`Self::read_into`]
    /// checks them), without decoding it: `out` then ends with the frame's
    /// records in wire form (tag byte + encoding each).
    ///
    /// Returns the frame's header, or `Ok(None)` on a clean end of stream at
    /// a frame boundary. On an error `out` is left as it was and the caller
    /// should drop the connection.
    pub fn read_payload_into(
        &mut self,
        out: &mut Vec<u8>,
    ) -> Result<Option<FrameHeader>, WireError> {
        let mut hb = [0u8; FRAME_HEADER_LEN];
        let got = read_full(&mut self.inner, &mut hb)?;
        if got == 0 {
            return Ok(None);
        }
        if got < FRAME_HEADER_LEN {
            return Err(WireError::Truncated {
                needed: FRAME_HEADER_LEN,
                got,
            });
        }
        let header = parse_header(&hb, self.max_payload)?;
        let n = header.payload_len as usize;
        let old = out.len();
        out.resize(old + n, 0);
        let checked = read_full(&mut self.inner, &mut out[old..])
            .and_then(|got| {
                if got < n {
                    Err(WireError::Truncated { needed: n, got })
                } else {
                    Ok(())
                }
            })
            .and_then(|()| check_crc(&hb, &header, &out[old..]))
            .and_then(|()| Ok(validate_payload(&out[old..], header.record_count)?));
        if let Err(e) = checked {
            out.truncate(old);
            return Err(e);
        }
        Ok(Some(header))
    }

    /// Reads the next frame; `Ok(None)` on a clean end of stream.
    pub fn read_batch(&mut self) -> Result<Option<Batch>, WireError> {
        let mut b = Batch::default();
        Ok(if self.read_into(&mut b)? {
            Some(b)
        } else {
            None
        })
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}

impl<R: Read> FrameReader<BufReader<R>> {
    /// True when a whole next frame (header and payload, as its header
    /// declares) is already buffered, so reading it needs no system call and
    /// cannot wait for the peer. Receivers use it to group frames that
    /// arrived together without delaying any of them.
    pub fn has_buffered_frame(&self) -> bool {
        let b = self.inner.buffer();
        match b.get(12..16) {
            Some(len) => {
                let n = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
                b.len() >= FRAME_HEADER_LEN.saturating_add(n)
            }
            None => false,
        }
    }
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
