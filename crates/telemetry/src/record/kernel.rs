//! Record kinds of the kernel's own work, recorded by `loom-agent`: block
//! I/O requests and run-queue waits.

use super::{check_len, u32_at, u64_at, Kind};
use crate::DecodeError;

/// What a block I/O request did (`REQ_OP_*` of the kernel, folded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockOp {
    /// `REQ_OP_READ`.
    Read,
    /// `REQ_OP_WRITE` (and zone appends).
    Write,
    /// `REQ_OP_FLUSH`.
    Flush,
    /// `REQ_OP_DISCARD`, secure erase and write-zeroes.
    Discard,
    /// Any other operation (zone management, driver commands).
    Other,
}

impl BlockOp {
    /// Every op, in encoding order.
    pub const ALL: [BlockOp; 5] = [
        BlockOp::Read,
        BlockOp::Write,
        BlockOp::Flush,
        BlockOp::Discard,
        BlockOp::Other,
    ];

    /// The op's byte in the encoding.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The op of an encoding byte, `None` past `Other`.
    pub fn from_code(b: u8) -> Option<BlockOp> {
        BlockOp::ALL.get(usize::from(b)).copied()
    }

    /// Lowercase name, the `op` tag of the `blockio` series.
    pub fn name(self) -> &'static str {
        match self {
            BlockOp::Read => "read",
            BlockOp::Write => "write",
            BlockOp::Flush => "flush",
            BlockOp::Discard => "discard",
            BlockOp::Other => "other",
        }
    }
}

/// One block I/O request, measured from issue to the driver until completion.
///
/// Encoding (44 bytes, little endian):
/// `pid u32 | tid u32 | device u32 | bytes u32 | op u8 | 3 reserved zero bytes |
///  sector u64 | start_us u64 | latency_us u64`.
/// `pid`/`tid` are the submitter's (0 when the kernel did not say who).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockIo {
    /// Process that submitted the request (0: not known).
    pub pid: u32,
    /// Thread that submitted the request (0: not known).
    pub tid: u32,
    /// Device as the kernel's `dev_t` (`major << 20 | minor`).
    pub device: u32,
    /// Bytes transferred.
    pub bytes: u32,
    /// Operation.
    pub op: BlockOp,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Issue time, µs.
    pub start_us: u64,
    /// Issue to completion, µs.
    pub latency_us: u64,
}

impl BlockIo {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 44;

    /// Appends the 44-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.device.to_le_bytes());
        out.extend_from_slice(&self.bytes.to_le_bytes());
        out.extend_from_slice(&[self.op.code(), 0, 0, 0]);
        out.extend_from_slice(&self.sector.to_le_bytes());
        out.extend_from_slice(&self.start_us.to_le_bytes());
        out.extend_from_slice(&self.latency_us.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<BlockIo, DecodeError> {
        check_len(Kind::BlockIo, b)?;
        let op = BlockOp::from_code(b[16]).ok_or(DecodeError::BadField {
            kind: "blockio",
            field: "op",
            value: u64::from(b[16]),
        })?;
        if b[17..20] != [0, 0, 0] {
            return Err(DecodeError::BadField {
                kind: "blockio",
                field: "reserved",
                value: u64::from(b[17]) | u64::from(b[18]) << 8 | u64::from(b[19]) << 16,
            });
        }
        Ok(BlockIo {
            pid: u32_at(b, 0),
            tid: u32_at(b, 4),
            device: u32_at(b, 8),
            bytes: u32_at(b, 12),
            op,
            sector: u64_at(b, 20),
            start_us: u64_at(b, 28),
            latency_us: u64_at(b, 36),
        })
    }

    /// Index value of an encoded request: its latency in µs (0 if `b` is short).
    pub fn index_value(b: &[u8]) -> u64 {
        u64_at(b, 36)
    }
}

/// One wait on a run queue: from the task's wake-up (or preemption) until
/// it runs on a CPU.
///
/// Encoding (28 bytes, little endian):
/// `pid u32 | tid u32 | cpu u32 | start_us u64 | latency_us u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunQueue {
    /// Process of the task that waited.
    pub pid: u32,
    /// Thread that waited.
    pub tid: u32,
    /// CPU it ran on after the wait.
    pub cpu: u32,
    /// Wake-up (or preemption) time, µs.
    pub start_us: u64,
    /// Time until it ran, µs.
    pub latency_us: u64,
}

impl RunQueue {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 28;

    /// Appends the 28-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.cpu.to_le_bytes());
        out.extend_from_slice(&self.start_us.to_le_bytes());
        out.extend_from_slice(&self.latency_us.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<RunQueue, DecodeError> {
        check_len(Kind::RunQueue, b)?;
        Ok(RunQueue {
            pid: u32_at(b, 0),
            tid: u32_at(b, 4),
            cpu: u32_at(b, 8),
            start_us: u64_at(b, 12),
            latency_us: u64_at(b, 20),
        })
    }

    /// Index value of an encoded wait: its latency in µs (0 if `b` is short).
    pub fn index_value(b: &[u8]) -> u64 {
        u64_at(b, 20)
    }
}
