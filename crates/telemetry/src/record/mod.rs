//! Telemetry record kinds and their fixed-size little-endian encodings.
//!
//! Every kind has a fixed encoded size (`ENCODED_LEN`); the encoded bytes are
//! exactly what apps store in the engine per record. Each kind also has an
//! index-value extractor with the engine's range-index signature
//! `fn(&[u8]) -> u64`; extractors never panic and return 0 on short input.

use crate::DecodeError;

mod agent;
mod kernel;
mod kv;
mod packet;
mod page_cache;
mod syscall;

pub use agent::AgentStat;
pub use kv::{KvOp, KvOpKind};
pub use packet::Packet;
pub use page_cache::PageCache;
pub use syscall::Syscall;

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
    pub const fn from_tag(tag: u8) -> Option<Kind> {
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
    pub const fn encoded_len(self) -> usize {
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
