//! Telemetry record kinds and their fixed-size little-endian encodings.
//!
//! Every kind has a fixed encoded size (`ENCODED_LEN`); the encoded bytes are
//! exactly what apps store in the engine per record. Each kind also has an
//! index-value extractor with the engine's range-index signature
//! `fn(&[u8]) -> u64`; extractors never panic and return 0 on short input.

use crate::source::{self, SourceId};
use crate::DecodeError;

mod agent;
mod kernel;

pub use agent::AgentStat;

/// Names of the agent's probes and stages, by code.
pub mod agent_names {
    pub use super::agent::{PROBES, STAGES};
}
pub use kernel::{BlockIo, BlockOp, RunQueue};

/// Record kind tag as written in batch payloads (one byte before each record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// Application key-value operation ([`KvOp`]).
    KvOp = 1,
    /// System call with its duration ([`Syscall`]).
    Syscall = 2,
    /// Page-cache insertion ([`PageCache`]).
    PageCache = 3,
    /// Network packet ([`Packet`]).
    Packet = 4,
    /// Block I/O request ([`BlockIo`]); wire protocol version 2 and later.
    BlockIo = 5,
    /// Run-queue wait ([`RunQueue`]); wire protocol version 2 and later.
    RunQueue = 6,
    /// An agent's events and drops per probe and stage ([`AgentStat`]).
    AgentStat = 7,
}

impl Kind {
    /// The kind for a payload tag byte, or `None` if the tag is unknown.
    pub fn from_tag(tag: u8) -> Option<Kind> {
        match tag {
            1 => Some(Kind::KvOp),
            2 => Some(Kind::Syscall),
            3 => Some(Kind::PageCache),
            4 => Some(Kind::Packet),
            5 => Some(Kind::BlockIo),
            6 => Some(Kind::RunQueue),
            7 => Some(Kind::AgentStat),
            _ => None,
        }
    }

    /// Encoded size in bytes of one record of this kind (without the tag byte).
    pub fn encoded_len(self) -> usize {
        match self {
            Kind::KvOp => KvOp::ENCODED_LEN,
            Kind::Syscall => Syscall::ENCODED_LEN,
            Kind::PageCache => PageCache::ENCODED_LEN,
            Kind::Packet => Packet::ENCODED_LEN,
            Kind::BlockIo => BlockIo::ENCODED_LEN,
            Kind::RunQueue => RunQueue::ENCODED_LEN,
            Kind::AgentStat => AgentStat::ENCODED_LEN,
        }
    }

    /// Index-value extractor for records of this kind (see the kind's `index_value`).
    pub fn extractor(self) -> fn(&[u8]) -> u64 {
        match self {
            Kind::KvOp => KvOp::index_value,
            Kind::Syscall => Syscall::index_value,
            Kind::PageCache => PageCache::index_value,
            Kind::Packet => Packet::index_value,
            Kind::BlockIo => BlockIo::index_value,
            Kind::RunQueue => RunQueue::index_value,
            Kind::AgentStat => AgentStat::index_value,
        }
    }

    /// Short lowercase name (`kv`, `syscall`, `pagecache`, `packet`,
    /// `blockio`, `runqueue`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::KvOp => "kv",
            Kind::Syscall => "syscall",
            Kind::PageCache => "pagecache",
            Kind::Packet => "packet",
            Kind::BlockIo => "blockio",
            Kind::RunQueue => "runqueue",
            Kind::AgentStat => "agent",
        }
    }
}

/// Reads a little-endian u64 at `off`, or 0 if `b` is too short.
#[inline]
pub(crate) fn u64_at(b: &[u8], off: usize) -> u64 {
    match b.get(off..off + 8) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        }
        None => 0,
    }
}

#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> u32 {
    match b.get(off..off + 4) {
        Some(s) => {
            let mut a = [0u8; 4];
            a.copy_from_slice(s);
            u32::from_le_bytes(a)
        }
        None => 0,
    }
}

#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> u16 {
    match b.get(off..off + 2) {
        Some(s) => u16::from_le_bytes([s[0], s[1]]),
        None => 0,
    }
}

pub(crate) fn check_len(kind: Kind, b: &[u8]) -> Result<(), DecodeError> {
    if b.len() != kind.encoded_len() {
        return Err(DecodeError::BadRecordLength {
            kind: kind.name(),
            expected: kind.encoded_len(),
            got: b.len(),
        });
    }
    Ok(())
}

/// Key-value operation kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KvOpKind {
    /// A read (get).
    Read,
    /// A write (put/delete).
    Write,
}

/// One application key-value operation.
///
/// Encoding (24 bytes, little endian):
/// `thread_id u32 | op u8 (0 = read, 1 = write) | 3 reserved zero bytes |
///  start_us u64 | duration_us u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KvOp {
    /// Thread that issued the operation.
    pub thread_id: u32,
    /// Read or write.
    pub op: KvOpKind,
    /// Start of the operation, µs (clock chosen by the producer).
    pub start_us: u64,
    /// Duration of the operation in µs.
    pub duration_us: u64,
}

impl KvOp {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 24;

    /// Appends the 24-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.thread_id.to_le_bytes());
        out.push(match self.op {
            KvOpKind::Read => 0,
            KvOpKind::Write => 1,
        });
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&self.start_us.to_le_bytes());
        out.extend_from_slice(&self.duration_us.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<KvOp, DecodeError> {
        check_len(Kind::KvOp, b)?;
        let op = match b[4] {
            0 => KvOpKind::Read,
            1 => KvOpKind::Write,
            other => {
                return Err(DecodeError::BadField {
                    kind: "kv",
                    field: "op",
                    value: u64::from(other),
                })
            }
        };
        if b[5..8] != [0, 0, 0] {
            // Reserved bytes must be zero, so every record has one encoding.
            return Err(DecodeError::BadField {
                kind: "kv",
                field: "reserved",
                value: u64::from(b[5]) | u64::from(b[6]) << 8 | u64::from(b[7]) << 16,
            });
        }
        Ok(KvOp {
            thread_id: u32_at(b, 0),
            op,
            start_us: u64_at(b, 8),
            duration_us: u64_at(b, 16),
        })
    }

    /// Index value of an encoded KV op: its duration in µs (0 if `b` is short).
    pub fn index_value(b: &[u8]) -> u64 {
        u64_at(b, 16)
    }
}

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

/// One page inserted into the page cache.
///
/// Encoding (44 bytes, little endian):
/// `pid u32 | tid u32 | timestamp_us u64 | pfn u64 | inode u64 | index u64 | device u32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageCache {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time of the insertion, µs.
    pub timestamp_us: u64,
    /// Page frame number.
    pub pfn: u64,
    /// Inode of the file the page belongs to.
    pub inode: u64,
    /// Page index within the file.
    pub index: u64,
    /// Device number of the file system.
    pub device: u32,
}

impl PageCache {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 44;

    /// Appends the 44-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.timestamp_us.to_le_bytes());
        out.extend_from_slice(&self.pfn.to_le_bytes());
        out.extend_from_slice(&self.inode.to_le_bytes());
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&self.device.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<PageCache, DecodeError> {
        check_len(Kind::PageCache, b)?;
        Ok(PageCache {
            pid: u32_at(b, 0),
            tid: u32_at(b, 4),
            timestamp_us: u64_at(b, 8),
            pfn: u64_at(b, 16),
            inode: u64_at(b, 24),
            index: u64_at(b, 32),
            device: u32_at(b, 40),
        })
    }

    /// Index value of a page-cache event: always 0 (page-cache queries only count,
    /// so a single bin suffices).
    pub fn index_value(_b: &[u8]) -> u64 {
        0
    }
}

/// One network packet.
///
/// Encoding (48 bytes, little endian): `src_addr [u8; 16] | dst_addr [u8; 16] |
/// src_port u16 | dst_port u16 | length u32 | timestamp_us u64`.
/// Addresses are IPv6 bytes (IPv4 as IPv4-mapped IPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Source address (IPv6 or IPv4-mapped).
    pub src_addr: [u8; 16],
    /// Destination address (IPv6 or IPv4-mapped).
    pub dst_addr: [u8; 16],
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Packet length in bytes.
    pub length: u32,
    /// Capture time, µs.
    pub timestamp_us: u64,
}

impl Packet {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 48;

    /// Appends the 48-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.src_addr);
        out.extend_from_slice(&self.dst_addr);
        out.extend_from_slice(&self.src_port.to_le_bytes());
        out.extend_from_slice(&self.dst_port.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out.extend_from_slice(&self.timestamp_us.to_le_bytes());
    }

    /// Decodes exactly [`Self::ENCODED_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<Packet, DecodeError> {
        check_len(Kind::Packet, b)?;
        let mut src_addr = [0u8; 16];
        let mut dst_addr = [0u8; 16];
        src_addr.copy_from_slice(&b[0..16]);
        dst_addr.copy_from_slice(&b[16..32]);
        Ok(Packet {
            src_addr,
            dst_addr,
            src_port: u16_at(b, 32),
            dst_port: u16_at(b, 34),
            length: u32_at(b, 36),
            timestamp_us: u64_at(b, 40),
        })
    }

    /// Index value of an encoded packet: its destination port (0 if `b` is
    /// shorter than a packet).
    pub fn index_value(b: &[u8]) -> u64 {
        // The port sits mid-record, so a cut record would still hold one:
        // check the whole length, as the extractors whose field ends the
        // record do implicitly.
        if b.len() < Self::ENCODED_LEN {
            return 0;
        }
        u64::from(u16_at(b, 34))
    }
}

/// Any telemetry record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Record {
    /// See [`KvOp`].
    KvOp(KvOp),
    /// See [`Syscall`].
    Syscall(Syscall),
    /// See [`PageCache`].
    PageCache(PageCache),
    /// See [`Packet`].
    Packet(Packet),
    /// See [`BlockIo`].
    BlockIo(BlockIo),
    /// See [`RunQueue`].
    RunQueue(RunQueue),
    /// See [`AgentStat`].
    AgentStat(AgentStat),
}

impl Record {
    /// The record's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Record::KvOp(_) => Kind::KvOp,
            Record::Syscall(_) => Kind::Syscall,
            Record::PageCache(_) => Kind::PageCache,
            Record::Packet(_) => Kind::Packet,
            Record::BlockIo(_) => Kind::BlockIo,
            Record::RunQueue(_) => Kind::RunQueue,
            Record::AgentStat(_) => Kind::AgentStat,
        }
    }

    /// Stable source id of the record's stream (see [`crate::source`]).
    pub fn source_id(&self) -> SourceId {
        match self {
            Record::KvOp(r) => source::kv(r.op),
            Record::Syscall(r) => source::syscall(r.nr),
            Record::PageCache(_) => source::page_cache(),
            Record::Packet(_) => source::packet(),
            Record::BlockIo(r) => source::blockio(r.op),
            Record::RunQueue(_) => source::runqueue(),
            Record::AgentStat(a) => source::agent(a.probe, a.stage),
        }
    }

    /// The record's own (event) timestamp in µs: start time for KV ops and
    /// syscalls, event time for page-cache events and packets.
    pub fn timestamp_us(&self) -> u64 {
        match self {
            Record::KvOp(r) => r.start_us,
            Record::Syscall(r) => r.start_us,
            Record::PageCache(r) => r.timestamp_us,
            Record::Packet(r) => r.timestamp_us,
            Record::BlockIo(r) => r.start_us,
            Record::RunQueue(r) => r.start_us,
            Record::AgentStat(a) => a.time_us,
        }
    }

    /// Returns the record with its event timestamp moved forward by `delta_us`
    /// (saturating).
    pub fn shifted(mut self, delta_us: u64) -> Record {
        match &mut self {
            Record::KvOp(r) => r.start_us = r.start_us.saturating_add(delta_us),
            Record::Syscall(r) => r.start_us = r.start_us.saturating_add(delta_us),
            Record::PageCache(r) => r.timestamp_us = r.timestamp_us.saturating_add(delta_us),
            Record::Packet(r) => r.timestamp_us = r.timestamp_us.saturating_add(delta_us),
            Record::BlockIo(r) => r.start_us = r.start_us.saturating_add(delta_us),
            Record::RunQueue(r) => r.start_us = r.start_us.saturating_add(delta_us),
            Record::AgentStat(a) => a.time_us = a.time_us.saturating_add(delta_us),
        }
        self
    }

    /// The index value of the record (same as the kind's extractor applied to
    /// its encoding).
    pub fn index_value(&self) -> u64 {
        match self {
            Record::KvOp(r) => r.duration_us,
            Record::Syscall(r) => r.duration_us,
            Record::PageCache(_) => 0,
            Record::Packet(r) => u64::from(r.dst_port),
            Record::BlockIo(r) => r.latency_us,
            Record::RunQueue(r) => r.latency_us,
            Record::AgentStat(_) => 0,
        }
    }

    /// Appends the record's fixed-size encoding (no kind tag) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Record::KvOp(r) => r.encode_into(out),
            Record::Syscall(r) => r.encode_into(out),
            Record::PageCache(r) => r.encode_into(out),
            Record::Packet(r) => r.encode_into(out),
            Record::BlockIo(r) => r.encode_into(out),
            Record::RunQueue(r) => r.encode_into(out),
            Record::AgentStat(a) => a.encode_into(out),
        }
    }

    /// Decodes the fixed-size encoding of a record of kind `kind`.
    pub fn decode(kind: Kind, b: &[u8]) -> Result<Record, DecodeError> {
        Ok(match kind {
            Kind::KvOp => Record::KvOp(KvOp::decode(b)?),
            Kind::Syscall => Record::Syscall(Syscall::decode(b)?),
            Kind::PageCache => Record::PageCache(PageCache::decode(b)?),
            Kind::Packet => Record::Packet(Packet::decode(b)?),
            Kind::BlockIo => Record::BlockIo(BlockIo::decode(b)?),
            Kind::RunQueue => Record::RunQueue(RunQueue::decode(b)?),
            Kind::AgentStat => Record::AgentStat(AgentStat::decode(b)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Record> {
        vec![
            Record::KvOp(KvOp {
                thread_id: 7,
                op: KvOpKind::Write,
                start_us: 123_456,
                duration_us: 789,
            }),
            Record::Syscall(Syscall {
                pid: 1,
                tid: 2,
                nr: 17,
                start_us: 99,
                duration_us: u64::MAX,
            }),
            Record::PageCache(PageCache {
                pid: 3,
                tid: 4,
                timestamp_us: 5,
                pfn: 6,
                inode: 7,
                index: 8,
                device: 9,
            }),
            Record::Packet(Packet {
                src_addr: [1; 16],
                dst_addr: [2; 16],
                src_port: 80,
                dst_port: 443,
                length: 1500,
                timestamp_us: 42,
            }),
            Record::BlockIo(BlockIo {
                pid: 10,
                tid: 11,
                device: 8 << 20,
                bytes: 4096,
                op: BlockOp::Discard,
                sector: 1 << 40,
                start_us: 77,
                latency_us: 123,
            }),
            Record::RunQueue(RunQueue {
                pid: 12,
                tid: 13,
                cpu: 1,
                start_us: 88,
                latency_us: 9,
            }),
            Record::AgentStat(AgentStat {
                probe: 2,
                stage: 1,
                time_us: 99,
                events: 1000,
                dropped: 3,
            }),
        ]
    }

    #[test]
    fn encodings_have_documented_sizes_and_round_trip() {
        for r in samples() {
            let mut buf = Vec::new();
            r.encode_into(&mut buf);
            assert_eq!(buf.len(), r.kind().encoded_len());
            assert_eq!(Record::decode(r.kind(), &buf).unwrap(), r);
            assert_eq!((r.kind().extractor())(&buf), r.index_value());
        }
    }

    #[test]
    fn extractors_return_zero_on_short_input() {
        for k in [
            Kind::KvOp,
            Kind::Syscall,
            Kind::PageCache,
            Kind::Packet,
            Kind::BlockIo,
            Kind::RunQueue,
            Kind::AgentStat,
        ] {
            // All-ones bytes make every field its maximum, so a value read
            // from a short record could not be mistaken for 0.
            let whole = vec![0xffu8; k.encoded_len()];
            let want = match k {
                Kind::KvOp | Kind::Syscall | Kind::BlockIo | Kind::RunQueue => u64::MAX,
                Kind::PageCache | Kind::AgentStat => 0,
                Kind::Packet => u64::from(u16::MAX),
            };
            assert_eq!((k.extractor())(&whole), want, "kind {k:?} whole record");
            for n in 0..k.encoded_len() {
                assert_eq!((k.extractor())(&whole[..n]), 0, "kind {k:?} len {n}");
            }
        }
    }

    #[test]
    fn decode_rejects_wrong_length_and_bad_op() {
        assert!(KvOp::decode(&[0u8; 23]).is_err());
        assert!(KvOp::decode(&[0u8; 25]).is_err());
        let mut b = vec![0u8; 24];
        b[4] = 2;
        assert!(matches!(
            KvOp::decode(&b),
            Err(DecodeError::BadField { field: "op", .. })
        ));
        let mut b = vec![0u8; 24];
        b[6] = 1;
        assert!(matches!(
            KvOp::decode(&b),
            Err(DecodeError::BadField {
                field: "reserved",
                ..
            })
        ));
        let mut b = vec![0u8; BlockIo::ENCODED_LEN];
        assert!(BlockIo::decode(&b).is_ok());
        b[16] = 5;
        assert!(matches!(
            BlockIo::decode(&b),
            Err(DecodeError::BadField { field: "op", .. })
        ));
        b[16] = 0;
        b[19] = 1;
        assert!(matches!(
            BlockIo::decode(&b),
            Err(DecodeError::BadField {
                field: "reserved",
                ..
            })
        ));
    }
}
