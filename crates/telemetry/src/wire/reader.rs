//! Reading frames of either version from a byte stream.

use std::io::{BufReader, ErrorKind, Read};

use super::{
    check_and_decode, check_crc, check_prefix, header_len, parse_header, FrameHeader, FrameType,
    DEFAULT_MAX_PAYLOAD, FRAME_HEADER_LEN_V2, FRAME_PREFIX_LEN, FRAME_VERSION_2,
};
use crate::batch::Batch;
use crate::raw::validate_payload;
use crate::WireError;

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

    /// Appends exactly `n` payload bytes to `buf`; on an error `buf` is
    /// left as it was.
    ///
    /// Through `Take::read_to_end`, not a zero-filled `resize` and `read`:
    /// bytes served from a `BufReader`'s buffer (every payload smaller than
    /// that buffer, so nearly all of them) are then copied into the spare
    /// capacity without zeroing it first. The zero fill showed in profiles
    /// of an ingesting loom-app, for bytes overwritten at once.
    fn read_payload(&mut self, buf: &mut Vec<u8>, n: usize) -> Result<(), WireError> {
        let old = buf.len();
        buf.reserve(n);
        let read = self.inner.by_ref().take(n as u64).read_to_end(buf);
        match read {
            Ok(got) if got == n => Ok(()),
            Ok(got) => {
                buf.truncate(old);
                Err(WireError::Truncated { needed: n, got })
            }
            Err(e) => {
                buf.truncate(old);
                Err(WireError::Io {
                    context: "reading a frame",
                    source: e,
                })
            }
        }
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
