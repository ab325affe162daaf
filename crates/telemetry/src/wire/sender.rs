//! The sender's side of a version-2 connection: the HELLO exchange and
//! the host and process names senders put in their HELLO and SERIES frames.

use std::io::{Read, Write};

use super::{control, encode_control, FrameReader, FrameType, Hello, Incoming, Welcome};
use crate::WireError;

/// Sends `hello` as the first frame on `stream` and waits for the answer:
/// the WELCOME, or `Refused` with the receiver's reason. The caller sets a
/// read timeout on the stream if it must not wait forever.
pub fn handshake<S: Read + Write>(stream: &mut S, hello: &Hello) -> Result<Welcome, WireError> {
    let mut f = Vec::new();
    encode_control(FrameType::Hello, 0, now_us(), &hello.encode()?, &mut f)?;
    stream
        .write_all(&f)
        .and_then(|()| stream.flush())
        .map_err(|e| WireError::Io {
            context: "sending the HELLO",
            source: e,
        })?;
    let mut r = FrameReader::new(stream);
    match r.read_frame_into(&mut Vec::new())? {
        Some(Incoming::Control(h, p)) if h.frame_type == FrameType::Welcome => Welcome::decode(&p),
        Some(Incoming::Control(h, p)) if h.frame_type == FrameType::Refuse => {
            Err(WireError::Refused(control::decode_refusal(&p)?))
        }
        Some(other) => Err(WireError::BadControl(format!(
            "expected WELCOME or REFUSE, got {other:?}"
        ))),
        None => Err(WireError::Refused(
            "the receiver closed the connection without an answer (a receiver that speaks only version 1?)"
                .into(),
        )),
    }
}

/// Wall-clock time, µs since the Unix epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// This machine's host name (`gethostname`), `localhost` if it has none.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at
    // most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match (rc, std::str::from_utf8(&buf[..end])) {
        (0, Ok(s)) if !s.is_empty() => s.to_string(),
        _ => "localhost".to_string(),
    }
}

/// This process's name as in `/proc/self/comm` (`unknown` if unreadable).
pub fn own_comm() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim_end().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}
