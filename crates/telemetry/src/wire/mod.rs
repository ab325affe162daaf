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
mod reader;
pub mod resend;
pub mod sender;
mod v1;
mod v2;

use crate::batch::{decode_payload_into, Batch};
use crate::WireError;

pub use control::{Hello, SeriesTags, Welcome};
pub use reader::{FrameReader, Incoming};
pub use v1::{encode_frame, encode_frame_payload, encode_frame_payload_with, FrameWriter};
pub use v2::{encode_control, encode_data_v2};

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
pub(crate) fn check_prefix(h: &[u8]) -> Result<usize, WireError> {
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

pub(crate) fn check_crc(
    header_bytes: &[u8],
    header: &FrameHeader,
    payload: &[u8],
) -> Result<(), WireError> {
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

pub(crate) fn check_and_decode(
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
/// The first whole frame of `buf` (either version), checked (header and
/// checksum, not the records): its header and total length. `Ok(None)`
/// while `buf` does not hold a whole frame yet. A sender reads the
/// receiver's few control frames (WELCOME, ACK, REFUSE) with it.
pub fn split_frame(
    buf: &[u8],
    max_payload: usize,
) -> Result<Option<(FrameHeader, usize)>, WireError> {
    if buf.len() < FRAME_PREFIX_LEN {
        return Ok(None);
    }
    let len = check_prefix(buf)?;
    if buf.len() < len {
        return Ok(None);
    }
    let header = parse_header(buf, max_payload)?;
    let end = len + header.payload_len as usize;
    let Some(payload) = buf.get(len..end) else {
        return Ok(None);
    };
    check_crc(buf, &header, payload)?;
    Ok(Some((header, end)))
}
