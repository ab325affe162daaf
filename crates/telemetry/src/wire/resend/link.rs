//! The connection a resending sender writes to, and a readiness check
//! that never waits.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;

use crate::WireError;

/// A connection a [`ResendingSender`](super::ResendingSender) writes to: plain TCP or TLS over it.
pub trait Link: Read + Write + Send {
    /// The TCP socket underneath (timeouts, readiness).
    fn tcp(&self) -> &TcpStream;
}

impl Link for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

/// Opens a new connection (TCP connect, and TLS when configured).
pub type Connector = Box<dyn FnMut() -> Result<Box<dyn Link>, WireError> + Send>;

/// Whether `s` has bytes to read now (never waits).
pub(super) fn readable(s: &TcpStream) -> bool {
    let mut p = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents != 0
}
