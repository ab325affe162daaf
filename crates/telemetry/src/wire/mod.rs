//! TCP wire format: a stream of self-delimiting frames.
//!
//! Two versions share the first eight bytes, so a receiver tells them apart
//! by the version field; `docs/wire-protocol.md` is the full description.
//!
//! Version 1 (recordings' senders, `tcp-replay`, old workloads), all
//! integers little endian:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | magic `b"LMTF"` |
//! | 4 | 2 | version = 1 |
//! | 6 | 2 | flags, must be 0 |
//! | 8 | 4 | record count |
//! | 12 | 4 | payload length in bytes |
//! | 16 | 8 | batch arrival time, µs |
//! | 24 | 4 | CRC32C of header bytes 0..24 followed by the payload |
//! | 28 | n | payload (see [`crate::batch`]) |
//!
//! Version 2 (`loom-agent`, the workloads): a HELLO control frame first,
//! then data and SERIES frames; 40-byte header:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | magic `b"LMTF"` |
//! | 4 | 2 | version = 2 |
//! | 6 | 1 | frame type ([`FrameType`]) |
//! | 7 | 1 | flags, must be 0 |
//! | 8 | 4 | record count (data frames; 0 otherwise) |
//! | 12 | 4 | payload length in bytes |
//! | 16 | 8 | time the frame was sent, wall clock µs |
//! | 24 | 8 | sequence number (data: per sender, from 1; ACK: acknowledged) |
//! | 32 | 4 | series reference (data frames; 0 = no added tags) |
//! | 36 | 4 | CRC32C of header bytes 0..36 followed by the payload |
//! | 40 | n | payload: records (data) or the control message ([`control`]) |
//!
//! The receiver checks, in order: magic, version, type and flags, payload
//! length against its bound ([`DEFAULT_MAX_PAYLOAD`] unless configured;
//! [`MAX_CONTROL_PAYLOAD`] for control frames), the checksum, then that a
//! data payload decodes to exactly the declared number of records. Any
//! failure is a [`WireError`]; the receiver then closes that connection
//! (frames cannot be resynchronised safely). A clean end of stream exactly
//! at a frame boundary is not an error.

pub mod control;
pub mod sender;

use std::io::{BufReader, ErrorKind, Read, Write};

use crate::batch::{decode_payload_into, Batch};
use crate::raw::validate_payload;
use crate::WireError;

pub use control::{Hello, SeriesTags, Welcome};

/// Frame magic.
pub const FRAME_MAGIC: [u8; 4] = *b"LMTF";
/// Version of the frames [`encode_frame`] writes (version 1).
pub const FRAME_VERSION: u16 = 1;
/// Version 2: control frames, sequence numbers, series tags.
pub const FRAME_VERSION_2: u16 = 2;
/// Version-1 frame header size in bytes.
pub const FRAME_HEADER_LEN: usize = 28;
/// Version-2 frame header size in bytes.
pub const FRAME_HEADER_LEN_V2: usize = 40;
/// Bytes that hold magic and version, enough to know the header length.
pub const FRAME_PREFIX_LEN: usize = 6;
/// Default bound on a frame's payload length (16 MiB).
pub const DEFAULT_MAX_PAYLOAD: usize = 16 << 20;
/// Bound on a control frame's payload (64 KiB).
pub const MAX_CONTROL_PAYLOAD: usize = 64 << 10;

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

/// Appends a version-2 data frame holding `payload` (exactly
/// `record_count` tagged records, not checked here) with sequence number
/// `seq` and series reference `series_ref` (0: no added tags).
pub fn encode_data_v2(
    seq: u64,
    series_ref: u32,
    record_count: u32,
    sent_us: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    put_v2(
        out,
        FrameType::Data,
        (record_count, sent_us, seq, series_ref),
        payload,
    )
}

/// Appends a version-2 control frame of type `t` (not `Data`) with
/// `payload` (at most [`MAX_CONTROL_PAYLOAD`] bytes) and sequence field `seq`.
pub fn encode_control(
    t: FrameType,
    seq: u64,
    sent_us: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    if t == FrameType::Data || payload.len() > MAX_CONTROL_PAYLOAD {
        return Err(WireError::BadControl(format!(
            "cannot encode a {t:?} control frame of {} bytes",
            payload.len()
        )));
    }
    put_v2(out, t, (0, sent_us, seq, 0), payload)
}

fn put_v2(
    out: &mut Vec<u8>,
    t: FrameType,
    (count, time, seq, series_ref): (u32, u64, u64, u32),
    payload: &[u8],
) -> Result<(), WireError> {
    let len = u32::try_from(payload.len()).map_err(|_| WireError::PayloadTooLarge {
        len: payload.len() as u64,
        max: u64::from(u32::MAX),
    })?;
    let start = out.len();
    out.extend_from_slice(&FRAME_MAGIC);
    out.extend_from_slice(&FRAME_VERSION_2.to_le_bytes());
    out.extend_from_slice(&[t as u8, 0]);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&time.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&series_ref.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c_append(
        crc32c::crc32c(&out[start..start + FRAME_HEADER_LEN_V2 - 4]),
        &out[start + FRAME_HEADER_LEN_V2..],
    );
    out[start + FRAME_HEADER_LEN_V2 - 4..start + FRAME_HEADER_LEN_V2]
        .copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// What a frame carries (version 2; every version-1 frame is `Data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameType {
    /// Records (the payload of [`crate::batch`]).
    Data = 0,
    /// Sender → receiver, first frame of a version-2 connection ([`Hello`]).
    Hello = 1,
    /// Receiver → sender: the connection is accepted ([`Welcome`]).
    Welcome = 2,
    /// Receiver → sender: the connection is refused (a reason), then closed.
    Refuse = 3,
    /// Receiver → sender: every data frame of this sender up to the header's
    /// sequence number is durable. Reserved: defined, not yet sent.
    Ack = 4,
    /// Sender → receiver: declares the tags of a series reference
    /// ([`SeriesTags`]) that later data frames name.
    Series = 5,
}

impl FrameType {
    /// The type of a header byte, `None` if unknown.
    pub fn from_code(b: u8) -> Option<FrameType> {
        Some(match b {
            0 => FrameType::Data,
            1 => FrameType::Hello,
            2 => FrameType::Welcome,
            3 => FrameType::Refuse,
            4 => FrameType::Ack,
            5 => FrameType::Series,
            _ => return None,
        })
    }
}

/// Parsed and validated frame header (either version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Format version (1 or 2).
    pub version: u16,
    /// What the frame carries (always `Data` in version 1).
    pub frame_type: FrameType,
    /// Declared record count (data frames; 0 for control frames).
    pub record_count: u32,
    /// Declared payload length in bytes.
    pub payload_len: u32,
    /// Batch arrival (version 1) or emission (version 2) time, µs.
    pub arrival_us: u64,
    /// Version 2: the sender's sequence number of a data frame, or the
    /// acknowledged one of an ACK; 0 otherwise and in version 1.
    pub seq: u64,
    /// Version 2 data frames: the series reference whose tags the records
    /// get (0: none); 0 otherwise.
    pub series_ref: u32,
    /// Stored checksum.
    pub crc: u32,
}

impl FrameHeader {
    /// Header length of this frame's version.
    pub fn len(&self) -> usize {
        header_len(self.version).unwrap_or(FRAME_HEADER_LEN)
    }

    /// Never true: a header is at least [`FRAME_HEADER_LEN`] bytes.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Header length of a frame of `version`, `None` for unknown versions.
pub fn header_len(version: u16) -> Option<usize> {
    match version {
        FRAME_VERSION => Some(FRAME_HEADER_LEN),
        FRAME_VERSION_2 => Some(FRAME_HEADER_LEN_V2),
        _ => None,
    }
}

/// Validates the start of a frame (magic, version) and returns its header
/// length; `h` must hold at least [`FRAME_PREFIX_LEN`] bytes.
fn check_prefix(h: &[u8]) -> Result<usize, WireError> {
    let mut magic = [0u8; 4];
    magic.copy_from_slice(&h[0..4]);
    if magic != FRAME_MAGIC {
        return Err(WireError::BadMagic {
            found: magic,
            expected: FRAME_MAGIC,
        });
    }
    let version = u16::from_le_bytes([h[4], h[5]]);
    header_len(version).ok_or(WireError::UnsupportedVersion {
        found: version,
        supported: FRAME_VERSION_2,
    })
}

/// Validates a whole header (magic, version, type, flags, payload bound):
/// `h` must start with the frame and hold at least its header.
pub fn parse_header(h: &[u8], max_payload: usize) -> Result<FrameHeader, WireError> {
    if h.len() < FRAME_PREFIX_LEN {
        return Err(WireError::Truncated {
            needed: FRAME_PREFIX_LEN,
            got: h.len(),
        });
    }
    let len = check_prefix(h)?;
    if h.len() < len {
        return Err(WireError::Truncated {
            needed: len,
            got: h.len(),
        });
    }
    let version = u16::from_le_bytes([h[4], h[5]]);
    let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
    let u64_at = |o: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&h[o..o + 8]);
        u64::from_le_bytes(a)
    };
    let (frame_type, seq, series_ref) = if version == FRAME_VERSION {
        let flags = u16::from_le_bytes([h[6], h[7]]);
        if flags != 0 {
            return Err(WireError::BadFlags(flags));
        }
        (FrameType::Data, 0, 0)
    } else {
        let t = FrameType::from_code(h[6]).ok_or(WireError::BadFrameType(h[6]))?;
        if h[7] != 0 {
            return Err(WireError::BadFlags(u16::from(h[7])));
        }
        (t, u64_at(24), u32_at(32))
    };
    let record_count = u32_at(8);
    let payload_len = u32_at(12);
    let bound = if frame_type == FrameType::Data {
        max_payload
    } else {
        MAX_CONTROL_PAYLOAD
    };
    if payload_len as usize > bound {
        return Err(WireError::PayloadTooLarge {
            len: u64::from(payload_len),
            max: bound as u64,
        });
    }
    if frame_type != FrameType::Data && record_count != 0 {
        return Err(WireError::BadControl(format!(
            "{frame_type:?} frame declares {record_count} records"
        )));
    }
    Ok(FrameHeader {
        version,
        frame_type,
        record_count,
        payload_len,
        arrival_us: u64_at(16),
        seq,
        series_ref,
        crc: u32_at(len - 4),
    })
}

fn check_crc(header_bytes: &[u8], header: &FrameHeader, payload: &[u8]) -> Result<(), WireError> {
    let n = header.len() - 4;
    let computed = crc32c::crc32c_append(crc32c::crc32c(&header_bytes[0..n]), payload);
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
    if header.frame_type != FrameType::Data {
        return Err(WireError::UnexpectedControl(header.frame_type));
    }
    out.arrival_us = header.arrival_us;
    decode_payload_into(payload, header.record_count, &mut out.records)?;
    Ok(())
}

/// Decodes one data frame (either version) from the start of `buf`,
/// returning the batch and the number of bytes consumed. Never panics;
/// incomplete input gives `Truncated`, a control frame `UnexpectedControl`.
pub fn decode_frame(buf: &[u8], max_payload: usize) -> Result<(Batch, usize), WireError> {
    let header = parse_header(buf, max_payload)?;
    let start = header.len();
    let end = start + header.payload_len as usize;
    let payload = buf.get(start..end).ok_or(WireError::Truncated {
        needed: end,
        got: buf.len(),
    })?;
    let mut batch = Batch::default();
    check_and_decode(buf, &header, payload, &mut batch)?;
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

/// A frame read by [`FrameReader::read_frame_into`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A data frame: its records were appended to the caller's buffer.
    Data(FrameHeader),
    /// A control frame (version 2) and its checked payload.
    Control(FrameHeader, Vec<u8>),
}

/// Reads and validates frames of either version from a byte stream (e.g.
/// a `TcpStream`).
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

    /// Reads and validates the next header; `None` at a clean end of stream.
    fn read_header(
        &mut self,
        hb: &mut [u8; FRAME_HEADER_LEN_V2],
    ) -> Result<Option<FrameHeader>, WireError> {
        let got = read_full(&mut self.inner, &mut hb[..FRAME_PREFIX_LEN])?;
        if got == 0 {
            return Ok(None);
        }
        if got < FRAME_PREFIX_LEN {
            return Err(WireError::Truncated {
                needed: FRAME_PREFIX_LEN,
                got,
            });
        }
        let len = check_prefix(&hb[..])?;
        let got = read_full(&mut self.inner, &mut hb[FRAME_PREFIX_LEN..len])?;
        if got < len - FRAME_PREFIX_LEN {
            return Err(WireError::Truncated {
                needed: len,
                got: FRAME_PREFIX_LEN + got,
            });
        }
        parse_header(&hb[..len], self.max_payload).map(Some)
    }

    /// Reads exactly `n` payload bytes into `buf[old..]`.
    fn read_payload(&mut self, buf: &mut Vec<u8>, n: usize) -> Result<(), WireError> {
        let old = buf.len();
        buf.resize(old + n, 0);
        let got = read_full(&mut self.inner, &mut buf[old..])?;
        if got < n {
            buf.truncate(old);
            return Err(WireError::Truncated { needed: n, got });
        }
        Ok(())
    }

    /// Reads the next data frame into `out` (reusing its allocation).
    ///
    /// Returns `Ok(false)` on a clean end of stream at a frame boundary,
    /// `Ok(true)` when `out` holds a new batch, and an error for anything
    /// else (a control frame is `UnexpectedControl`); after an error the
    /// stream position is undefined and the caller should drop the connection.
    pub fn read_into(&mut self, out: &mut Batch) -> Result<bool, WireError> {
        let mut hb = [0u8; FRAME_HEADER_LEN_V2];
        let Some(header) = self.read_header(&mut hb)? else {
            return Ok(false);
        };
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        let r = self
            .read_payload(&mut payload, header.payload_len as usize)
            .and_then(|()| check_and_decode(&hb, &header, &payload, out));
        self.payload = payload;
        r.map(|()| true)
    }

    /// Reads the next frame of either version. A data frame's payload is
    /// appended to `out` once it is checked (checksum, and every record
    /// valid, as [`Self::read_into`] checks them), without decoding it: `out`
    /// then ends with the frame's records in wire form (tag byte + encoding
    /// each). A control frame's checked payload is returned with it.
    ///
    /// `Ok(None)` on a clean end of stream at a frame boundary. On an error
    /// `out` is left as it was and the caller should drop the connection.
    pub fn read_frame_into(&mut self, out: &mut Vec<u8>) -> Result<Option<Incoming>, WireError> {
        let mut hb = [0u8; FRAME_HEADER_LEN_V2];
        let Some(header) = self.read_header(&mut hb)? else {
            return Ok(None);
        };
        let n = header.payload_len as usize;
        if header.frame_type != FrameType::Data {
            let mut payload = Vec::with_capacity(n);
            self.read_payload(&mut payload, n)?;
            check_crc(&hb, &header, &payload)?;
            return Ok(Some(Incoming::Control(header, payload)));
        }
        let old = out.len();
        self.read_payload(out, n)?;
        let checked = check_crc(&hb, &header, &out[old..])
            .and_then(|()| Ok(validate_payload(&out[old..], header.record_count)?));
        if let Err(e) = checked {
            out.truncate(old);
            return Err(e);
        }
        Ok(Some(Incoming::Data(header)))
    }

    /// Like [`Self::read_frame_into`] for a stream of data frames only: a
    /// control frame is `UnexpectedControl`.
    pub fn read_payload_into(
        &mut self,
        out: &mut Vec<u8>,
    ) -> Result<Option<FrameHeader>, WireError> {
        match self.read_frame_into(out)? {
            None => Ok(None),
            Some(Incoming::Data(h)) => Ok(Some(h)),
            Some(Incoming::Control(h, _)) => Err(WireError::UnexpectedControl(h.frame_type)),
        }
    }

    /// Reads the next data frame; `Ok(None)` on a clean end of stream.
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

    /// The underlying stream, mutably (a receiver answers control frames on it).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: Read> FrameReader<BufReader<R>> {
    /// True when a whole next frame (header and payload, as its header
    /// declares) is already buffered, so reading it needs no system call and
    /// cannot wait for the peer. Receivers use it to group frames that
    /// arrived together without delaying any of them.
    pub fn has_buffered_frame(&self) -> bool {
        let b = self.inner.buffer();
        let Some(len) = b
            .get(4..6)
            .and_then(|v| header_len(u16::from_le_bytes([v[0], v[1]])))
        else {
            return false;
        };
        match b.get(12..16) {
            Some(n) => {
                let n = u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize;
                b.len() >= len.saturating_add(n)
            }
            None => false,
        }
    }

    /// True when the next buffered bytes start a control frame (version 2,
    /// type other than data); false when unknown.
    pub fn next_is_control(&self) -> bool {
        let b = self.inner.buffer();
        matches!((b.get(4..6), b.get(6)), (Some(v), Some(&t)) if v == FRAME_VERSION_2.to_le_bytes() && t != 0)
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
