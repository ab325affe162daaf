//! System calls measured from entry to exit (`Syscall`).

use super::{check_len, u32_at, u64_at, Kind};
use crate::DecodeError;

/// One system call, measured from entry to exit.
///
/// Encoding (28 bytes, little endian):
/// `pid u32 | tid u32 | syscall_nr u32 | start_us u64 | duration_us u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Syscall {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Syscall number (x86_64 numbering, e.g. 17 = `pread64`).
    pub nr: u32,
    /// Entry time, µs.
    pub start_us: u64,
    /// Duration from entry to exit, µs.
    pub duration_us: u64,
}

impl Syscall {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 28;
    /// x86_64 syscall number of `pread64`.
    pub const PREAD64: u32 = 17;

    /// Appends the 28-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.nr.to_le_bytes());
        out.extend_from_slice(&self.start_us.to_le_bytes());
        out.extend_from_slice(&self.duration_us.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<Syscall, DecodeError> {
        check_len(Kind::Syscall, b)?;
        Ok(Syscall {
            pid: u32_at(b, 0),
            tid: u32_at(b, 4),
            nr: u32_at(b, 8),
            start_us: u64_at(b, 12),
            duration_us: u64_at(b, 20),
        })
    }

    /// Index value of an encoded syscall: its duration in µs (0 if `b` is short).
    pub fn index_value(b: &[u8]) -> u64 {
        u64_at(b, 20)
    }
}
