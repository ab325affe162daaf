//! Reading encoded records in place, without decoding them into [`Record`]s.
//!
//! A validated payload (see [`validate_payload`]) already holds every
//! record's stored bytes: a kind tag byte, then the kind's fixed-size
//! encoding. An endpoint can push those bytes as they are; it needs only a
//! record's kind, its source key and its event time, which are read here at
//! fixed offsets. Every accessor agrees with the decoded [`Record`]
//! (`event_time` = [`Record::timestamp_us`], [`SourceKey::id`] =
//! [`Record::source_id`]); tests hold them to it.

use crate::batch::MIN_TAGGED_RECORD_LEN;
use crate::record::BlockOp;
use crate::record::{u32_at, u64_at, Kind, KvOp, Record};
use crate::source::{self, SourceId};
use crate::{DecodeError, KvOpKind};

/// Per tag byte: the bytes a record with that tag takes, tag included; 0
/// for an unknown tag. A table read instead of a `match` per record: with
/// KV ops and syscalls interleaved, the `match`'s indirect jump was
/// mispredicted often enough to be half of `validate_payload`'s time in
/// profiles of a receiving loom-app.
static STRIDE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut tag = 0;
    while tag < 256 {
        if let Some(kind) = Kind::from_tag(tag as u8) {
            t[tag] = 1 + kind.encoded_len() as u8;
        }
        tag += 1;
    }
    t
};

/// Checks that `payload` holds exactly `count` valid records (the same checks,
/// in the same order and with the same errors, as
/// [`crate::batch::decode_payload`]) without keeping the decoded records.
pub fn validate_payload(payload: &[u8], count: u32) -> Result<(), DecodeError> {
    if plainly_valid(payload, count) {
        return Ok(());
    }
    first_error(payload, count)
}

/// True only when `payload` holds exactly `count` valid records; false
/// when it does not, or may not (then [`first_error`] decides and names
/// the error). Valid payloads are nearly all of them, so this one answers
/// without a branch that depends on a record's kind in P2's mix: the KV
/// check is masked in, not branched to.
#[inline]
fn plainly_valid(payload: &[u8], count: u32) -> bool {
    let mut off = 0usize;
    let mut bad = 0u32;
    for _ in 0..count {
        let Some(&tag) = payload.get(off) else {
            return false;
        };
        let stride = usize::from(STRIDE[usize::from(tag)]);
        let Some(rec) = payload.get(off..off + stride) else {
            return false;
        };
        if stride == 0 {
            return false;
        }
        // A KV op's op byte is 0 or 1 and its 3 reserved bytes are 0: the
        // little-endian u32 of body bytes 4..8 is 0 or 1 (`KvOp::check`).
        // Every kind is at least 24 bytes long, so the read is in range.
        let kv = u32::from(tag == Kind::KvOp as u8).wrapping_neg();
        bad |= kv & (u32_at(rec, 5) & !1);
        if tag == Kind::BlockIo as u8 || tag == Kind::AgentStat as u8 {
            // Rare kinds whose fields can be invalid: the decoder checks.
            let ok = Kind::from_tag(tag).is_some_and(|k| Record::decode(k, &rec[1..]).is_ok());
            if !ok {
                return false;
            }
        }
        off += stride;
    }
    bad == 0 && off == payload.len()
}

/// [`validate_payload`]'s answer, record by record, with the first error.
fn first_error(payload: &[u8], count: u32) -> Result<(), DecodeError> {
    if (count as usize).saturating_mul(MIN_TAGGED_RECORD_LEN) > payload.len() {
        return Err(DecodeError::CountTooLarge {
            declared: count,
            payload_len: payload.len(),
        });
    }
    let mut off = 0usize;
    for index in 0..count {
        let tag = *payload
            .get(off)
            .ok_or(DecodeError::TruncatedRecord { index, offset: off })?;
        let kind = Kind::from_tag(tag).ok_or(DecodeError::UnknownKind { tag, offset: off })?;
        let end = off + 1 + kind.encoded_len();
        let body = payload
            .get(off + 1..end)
            .ok_or(DecodeError::TruncatedRecord { index, offset: off })?;
        // Only KV ops, block I/O and agent stats have fields that can be
        // invalid. KV ops are most of a workload's records: their decoder's
        // own check runs inline, without building a record (a decode call
        // per record showed in profiles of an ingesting loom-app); the rare
        // other two share the decoder, so both checks stay identical.
        match kind {
            Kind::KvOp => KvOp::check(body)?,
            Kind::BlockIo | Kind::AgentStat => {
                Record::decode(kind, body)?;
            }
            _ => {}
        }
        off = end;
    }
    if off != payload.len() {
        return Err(DecodeError::TrailingBytes {
            declared: count,
            extra: payload.len() - off,
        });
    }
    Ok(())
}

/// The records of a validated payload, as `(kind, encoded bytes)` without
/// the tag. Stops early (never panics) at bytes that are not a record, which
/// a payload that passed [`validate_payload`] does not have.
pub fn records(payload: &[u8]) -> PayloadRecords<'_> {
    PayloadRecords { payload, off: 0 }
}

/// Iterator returned by [`records`].
pub struct PayloadRecords<'a> {
    payload: &'a [u8],
    off: usize,
}

impl<'a> Iterator for PayloadRecords<'a> {
    type Item = (Kind, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let tag = *self.payload.get(self.off)?;
        let kind = Kind::from_tag(tag)?;
        let end = self.off + usize::from(STRIDE[usize::from(tag)]);
        let body = self.payload.get(self.off + 1..end)?;
        self.off = end;
        Some((kind, body))
    }
}

/// Byte offset of the event time (u64) in a kind's encoding.
const fn event_time_offset(kind: Kind) -> usize {
    match kind {
        Kind::KvOp => 8,
        Kind::Syscall => 12,
        Kind::PageCache => 8,
        Kind::Packet => 40,
        Kind::BlockIo => 28,
        Kind::RunQueue => 12,
        Kind::AgentStat => 8,
    }
}

/// The event time of an encoded record of `kind` (0 if `body` is short);
/// equals [`Record::timestamp_us`] of the decoded record.
#[inline]
pub fn event_time(kind: Kind, body: &[u8]) -> u64 {
    u64_at(body, event_time_offset(kind))
}

/// Adds `delta` (saturating) to the event time of an encoded record in
/// place, like [`Record::shifted`]; does nothing if `body` is short.
#[inline]
pub fn shift_event_time(kind: Kind, body: &mut [u8], delta: u64) {
    add_at(body, event_time_offset(kind), delta);
}

/// Adds `delta` (saturating) to the little-endian u64 at `at`; does nothing
/// if `b` is short there.
#[inline]
fn add_at(b: &mut [u8], at: usize, delta: u64) {
    if let Some(v) = b.get_mut(at..at.wrapping_add(8)) {
        let t = u64_at(v, 0).saturating_add(delta);
        v.copy_from_slice(&t.to_le_bytes());
    }
}

/// Adds `delta` to the event time of every record of a wire-form payload
/// (tag byte and encoding each) in place; stops at the first unknown tag.
pub fn shift_event_times(payload: &mut [u8], delta: u64) {
    let mut off = 0;
    while let Some(kind) = payload.get(off).and_then(|&t| Kind::from_tag(t)) {
        let end = off + 1 + kind.encoded_len();
        match payload.get_mut(off + 1..end) {
            Some(body) => shift_event_time(kind, body, delta),
            None => break,
        }
        off = end;
    }
}

/// Appends to `out` the byte offset, within `payload` (wire form: tag byte
/// and encoding each), of every record's event time (a little-endian u64);
/// stops at the first unknown tag, at a cut record, or at an offset past
/// `u32::MAX`. A sender that shifts the same payload by a new delta again
/// and again (a replay's loops) finds the fields once this way instead of
/// parsing every record's tag on every pass.
pub fn event_time_offsets(payload: &[u8], out: &mut Vec<u32>) {
    let mut off = 0;
    while let Some(kind) = payload.get(off).and_then(|&t| Kind::from_tag(t)) {
        let end = off + 1 + kind.encoded_len();
        let Ok(at) = u32::try_from(off + 1 + event_time_offset(kind)) else {
            break;
        };
        if end > payload.len() {
            break;
        }
        out.push(at);
        off = end;
    }
}

/// Adds `delta` (saturating) to the u64 at each of `offsets` in `payload`
/// (found by [`event_time_offsets`]); an offset out of range is skipped.
#[inline]
pub fn shift_at_offsets(payload: &mut [u8], offsets: &[u32], delta: u64) {
    for &o in offsets {
        add_at(payload, o as usize, delta);
    }
}

/// What picks a record's source, read from its encoding: the kind and, for
/// KV ops and syscalls, the sub-key. Small and `Copy`, so an endpoint can map
/// it to its declared source without hashing a tag per record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKey {
    /// KV reads (`false`) or writes (`true`).
    Kv(bool),
    /// Syscall number.
    Syscall(u32),
    /// Page-cache events.
    PageCache,
    /// Packets.
    Packet,
    /// Block I/O requests of one op (its [`BlockOp`] code).
    BlockIo(u8),
    /// Run-queue waits.
    RunQueue,
    /// An agent's counts of one probe (code) at one stage (code).
    AgentStat(u8, u8),
}

impl SourceKey {
    /// The key of an encoded record of `kind`. A KV op whose op byte is not
    /// a write counts as a read (validated payloads hold only 0 and 1).
    #[inline]
    pub fn of(kind: Kind, body: &[u8]) -> SourceKey {
        match kind {
            Kind::KvOp => SourceKey::Kv(body.get(4) == Some(&1)),
            Kind::Syscall => SourceKey::Syscall(u32_at(body, 8)),
            Kind::PageCache => SourceKey::PageCache,
            Kind::Packet => SourceKey::Packet,
            Kind::BlockIo => SourceKey::BlockIo(body.get(16).copied().unwrap_or(0)),
            Kind::RunQueue => SourceKey::RunQueue,
            Kind::AgentStat => SourceKey::AgentStat(
                body.first().copied().unwrap_or(0),
                body.get(1).copied().unwrap_or(0),
            ),
        }
    }

    /// The key of a decoded record.
    pub fn of_record(r: &Record) -> SourceKey {
        match r {
            Record::KvOp(k) => SourceKey::Kv(k.op == KvOpKind::Write),
            Record::Syscall(s) => SourceKey::Syscall(s.nr),
            Record::PageCache(_) => SourceKey::PageCache,
            Record::Packet(_) => SourceKey::Packet,
            Record::BlockIo(b) => SourceKey::BlockIo(b.op.code()),
            Record::RunQueue(_) => SourceKey::RunQueue,
            Record::AgentStat(a) => SourceKey::AgentStat(a.probe, a.stage),
        }
    }

    /// The data-model series of the source (measurement, tags, fields).
    pub fn series(self) -> crate::model::Series {
        use crate::model;
        match self {
            SourceKey::Kv(false) => model::kv(KvOpKind::Read),
            SourceKey::Kv(true) => model::kv(KvOpKind::Write),
            SourceKey::Syscall(nr) => model::syscall(nr),
            SourceKey::PageCache => model::page_cache(),
            SourceKey::Packet => model::packet(),
            SourceKey::BlockIo(op) => model::blockio(block_op(op)),
            SourceKey::RunQueue => model::runqueue(),
            SourceKey::AgentStat(p, s) => model::agent(p, s),
        }
    }

    /// The stable source id (see [`crate::source`]).
    pub fn id(self) -> SourceId {
        match self {
            SourceKey::Kv(false) => source::kv(KvOpKind::Read),
            SourceKey::Kv(true) => source::kv(KvOpKind::Write),
            SourceKey::Syscall(nr) => source::syscall(nr),
            SourceKey::PageCache => source::page_cache(),
            SourceKey::Packet => source::packet(),
            SourceKey::BlockIo(op) => source::blockio(block_op(op)),
            SourceKey::RunQueue => source::runqueue(),
            SourceKey::AgentStat(p, s) => source::agent(p, s),
        }
    }

    /// The source's plain tag (`syscall/17`, see [`crate::source`]).
    pub fn tag(self) -> String {
        match self {
            SourceKey::Kv(false) => "kv/read".into(),
            SourceKey::Kv(true) => "kv/write".into(),
            SourceKey::Syscall(nr) => format!("syscall/{nr}"),
            SourceKey::PageCache => "pagecache".into(),
            SourceKey::Packet => "packet".into(),
            SourceKey::BlockIo(op) => format!("blockio/{}", block_op(op).name()),
            SourceKey::RunQueue => "runqueue".into(),
            SourceKey::AgentStat(p, s) => source::agent_tag(p, s),
        }
    }
}

/// The op of a block I/O code byte; validated payloads hold only valid
/// codes, anything else counts as `Other`.
fn block_op(code: u8) -> BlockOp {
    BlockOp::from_code(code).unwrap_or(BlockOp::Other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{decode_payload, Batch};
    use crate::record::{AgentStat, BlockIo, KvOp, Packet, PageCache, RunQueue, Syscall};

    fn sample() -> Vec<Record> {
        let mut v = Vec::new();
        for i in 0..48u64 {
            v.push(match i % 8 {
                5 => Record::BlockIo(BlockIo {
                    pid: 7,
                    tid: 8,
                    device: 259,
                    bytes: 4096,
                    op: if i % 2 == 0 {
                        BlockOp::Write
                    } else {
                        BlockOp::Read
                    },
                    sector: i * 8,
                    start_us: 20_000 + i,
                    latency_us: 90 + i,
                }),
                6 => Record::RunQueue(RunQueue {
                    pid: 9,
                    tid: 10,
                    cpu: 1,
                    start_us: 30_000 + i,
                    latency_us: i,
                }),
                7 => Record::AgentStat(AgentStat {
                    probe: 1,
                    stage: 0,
                    time_us: 40_000 + i,
                    events: i,
                    dropped: 0,
                }),
                0 => Record::KvOp(KvOp {
                    thread_id: i as u32,
                    op: if i % 2 == 0 {
                        KvOpKind::Read
                    } else {
                        KvOpKind::Write
                    },
                    start_us: 1_000 + i,
                    duration_us: i * 7,
                }),
                1 => Record::Syscall(Syscall {
                    pid: 1,
                    tid: 2,
                    nr: (i * 37) as u32 % 600,
                    start_us: 5_000 + i,
                    duration_us: i,
                }),
                2 => Record::PageCache(PageCache {
                    pid: 3,
                    tid: 4,
                    timestamp_us: 9_000 + i,
                    pfn: i,
                    inode: 2 * i,
                    index: 3 * i,
                    device: 5,
                }),
                3 => Record::Packet(Packet {
                    src_addr: [i as u8; 16],
                    dst_addr: [1; 16],
                    src_port: 1,
                    dst_port: i as u16,
                    length: 64,
                    timestamp_us: u64::MAX - i,
                }),
                _ => Record::Syscall(Syscall {
                    pid: 0,
                    tid: 0,
                    nr: u32::MAX - i as u32,
                    start_us: i,
                    duration_us: 0,
                }),
            });
        }
        v
    }

    #[test]
    fn in_place_reads_agree_with_decoding() {
        let recs = sample();
        let mut payload = Vec::new();
        Batch::new(0, recs.clone()).encode_payload_into(&mut payload);
        validate_payload(&payload, recs.len() as u32).unwrap();
        let raw: Vec<_> = records(&payload).collect();
        assert_eq!(raw.len(), recs.len());
        for ((kind, body), r) in raw.into_iter().zip(&recs) {
            assert_eq!(kind, r.kind());
            assert_eq!(Record::decode(kind, body).unwrap(), *r);
            assert_eq!(event_time(kind, body), r.timestamp_us());
            assert_eq!(SourceKey::of(kind, body).id(), r.source_id());
            assert_eq!(SourceKey::of(kind, body), SourceKey::of_record(r));
            assert_eq!(SourceKey::of(kind, body).series(), r.series());
        }
    }

    #[test]
    fn shifting_in_place_equals_shifting_the_record() {
        for r in sample() {
            let mut body = Vec::new();
            r.encode_into(&mut body);
            shift_event_time(r.kind(), &mut body, 12_345);
            assert_eq!(Record::decode(r.kind(), &body).unwrap(), r.shifted(12_345));
        }
    }

    /// Shifting at offsets found once equals shifting record by record,
    /// for the whole payload and for a part of it; a cut payload yields
    /// offsets of its whole records only.
    #[test]
    fn shifting_at_found_offsets_equals_shifting_by_tags() {
        let mut payload = Vec::new();
        Batch::new(0, sample()).encode_payload_into(&mut payload);
        let mut offsets = Vec::new();
        event_time_offsets(&payload, &mut offsets);
        assert_eq!(offsets.len(), sample().len());
        let mut want = payload.clone();
        shift_event_times(&mut want, 777);
        let mut got = payload.clone();
        shift_at_offsets(&mut got, &offsets, 777);
        assert_eq!(got, want);
        // The records from the 10th on, shifted as their own slice.
        let from = records(&payload)
            .take(10)
            .map(|(_, b)| b.len() + 1)
            .sum::<usize>();
        let mut part = payload[from..].to_vec();
        let rebased: Vec<u32> = offsets[10..].iter().map(|&o| o - from as u32).collect();
        shift_at_offsets(&mut part, &rebased, 777);
        assert_eq!(part, want[from..]);
        let mut cut = Vec::new();
        event_time_offsets(&payload[..from + 3], &mut cut);
        assert_eq!(cut, offsets[..10]);
    }

    /// Timing only (`cargo test --release -p telemetry --lib validate_speed
    /// -- --ignored --nocapture`): ns per record of validation over KV ops
    /// and syscalls interleaved at random, as in P2.
    #[test]
    #[ignore]
    fn validate_speed() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let recs: Vec<Record> = (0..4096u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x % 5 < 3 {
                    Record::KvOp(KvOp {
                        thread_id: (x % 16) as u32,
                        op: if x.is_multiple_of(7) {
                            KvOpKind::Write
                        } else {
                            KvOpKind::Read
                        },
                        start_us: 1_000 + i,
                        duration_us: x % 100,
                    })
                } else {
                    Record::Syscall(Syscall {
                        pid: 1,
                        tid: (x % 16) as u32,
                        nr: [0, 1, 17, 232][(x % 4) as usize],
                        start_us: 1_000 + i,
                        duration_us: x % 1000,
                    })
                }
            })
            .collect();
        let mut payload = Vec::new();
        Batch::new(0, recs.clone()).encode_payload_into(&mut payload);
        let n = recs.len() as u32;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let mut ok = 0;
            for _ in 0..2000 {
                ok += usize::from(validate_payload(std::hint::black_box(&payload), n).is_ok());
            }
            let ns = t.elapsed().as_nanos() as f64 / (2000.0 * f64::from(n));
            let t = std::time::Instant::now();
            let mut seen = 0usize;
            for _ in 0..2000 {
                for (kind, body) in records(std::hint::black_box(&payload)) {
                    seen += event_time(kind, body) as usize & 1;
                    seen += usize::from(SourceKey::of(kind, body) == SourceKey::Kv(true));
                }
            }
            let walk = t.elapsed().as_nanos() as f64 / (2000.0 * f64::from(n));
            println!(
                "validate {ns:.2} ns/record ({ok} ok); walk+time+key {walk:.2} ns/record ({seen})"
            );
        }
    }

    #[test]
    fn validation_rejects_what_decoding_rejects() {
        let recs = sample();
        let mut payload = Vec::new();
        Batch::new(0, recs.clone()).encode_payload_into(&mut payload);
        let n = recs.len() as u32;
        // Every single-byte corruption and every cut: both accept or both
        // reject with the same error.
        for i in 0..payload.len() {
            for x in [0u8, 1, 2, 5, 0xff] {
                let mut p = payload.clone();
                p[i] = x;
                let want = decode_payload(&p, n).map(|_| ());
                assert_eq!(validate_payload(&p, n), want, "byte {i} = {x}");
            }
            let want = decode_payload(&payload[..i], n).map(|_| ());
            assert_eq!(validate_payload(&payload[..i], n), want, "cut at {i}");
        }
        for count in [0, n - 1, n + 1, u32::MAX] {
            let want = decode_payload(&payload, count).map(|_| ());
            assert_eq!(validate_payload(&payload, count), want, "count {count}");
        }
    }
}
