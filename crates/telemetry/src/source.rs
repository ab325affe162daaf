//! Stable source ids.
//!
//! A *source* is one stream of one kind and one sub-key. Its id is the 64-bit
//! FNV-1a hash (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`) of a
//! tag string:
//!
//! | source | tag |
//! | --- | --- |
//! | KV reads | `kv/read` |
//! | KV writes | `kv/write` |
//! | syscall number N (decimal) | `syscall/N`, e.g. `syscall/17` for `pread64` |
//! | page-cache events | `pagecache` |
//! | packets | `packet` |
//! | block I/O requests of one op | `blockio/read`, `blockio/write`, … |
//! | run-queue waits | `runqueue` |
//!
//! A sender on wire protocol version 2 may add tags to its series (host,
//! process name, see [`crate::wire::SeriesTags`]); such a series' id is
//! [`with_tags`] of the plain tag and those tags, so each (source, tag set)
//! is its own series, and a source without extra tags keeps its plain id.
//!
//! The hash is fixed forever (it is not std's randomized hasher), so ids are
//! the same in every process, recording and store.

use crate::record::{BlockOp, KvOpKind, Record};

/// Stable 64-bit identity of a telemetry source.
pub type SourceId = u64;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// Source id of KV reads or KV writes.
pub fn kv(op: KvOpKind) -> SourceId {
    match op {
        KvOpKind::Read => fnv1a64(b"kv/read"),
        KvOpKind::Write => fnv1a64(b"kv/write"),
    }
}

/// Source id of syscall number `nr`.
pub fn syscall(nr: u32) -> SourceId {
    fnv1a64(format!("syscall/{nr}").as_bytes())
}

/// Source id of page-cache events.
pub fn page_cache() -> SourceId {
    fnv1a64(b"pagecache")
}

/// Source id of packets.
pub fn packet() -> SourceId {
    fnv1a64(b"packet")
}

/// Source id of block I/O requests of `op`.
pub fn blockio(op: BlockOp) -> SourceId {
    fnv1a64(format!("blockio/{}", op.name()).as_bytes())
}

/// Source id of an agent's counts of `probe` at `stage` (codes of
/// [`crate::record::AgentStat`]): `agent/PROBE/STAGE`.
pub fn agent(probe: u8, stage: u8) -> SourceId {
    fnv1a64(agent_tag(probe, stage).as_bytes())
}

/// The tag `agent/PROBE/STAGE` (`?` for codes past the names).
pub fn agent_tag(probe: u8, stage: u8) -> String {
    use crate::record::agent_names::{PROBES, STAGES};
    format!(
        "agent/{}/{}",
        PROBES.get(usize::from(probe)).unwrap_or(&"?"),
        STAGES.get(usize::from(stage)).unwrap_or(&"?")
    )
}

/// Source id of run-queue waits.
pub fn runqueue() -> SourceId {
    fnv1a64(b"runqueue")
}

/// Source id of the source whose plain tag is `base` (e.g. `syscall/17`)
/// with the extra `tags` (sorted by key): FNV-1a 64 of `base` followed, per
/// tag, by the key's and the value's lengths (u32 little endian) and bytes,
/// so no two tag sets share an encoding. No tags: the plain id.
pub fn with_tags(base: &str, tags: &[(&str, &str)]) -> SourceId {
    let mut bytes = base.as_bytes().to_vec();
    for (k, v) in tags {
        for part in [k, v] {
            bytes.extend_from_slice(&(part.len() as u32).to_le_bytes());
            bytes.extend_from_slice(part.as_bytes());
        }
    }
    fnv1a64(&bytes)
}

/// The tag string of a source id among the known fixed sources and syscalls
/// 0..1024, for printing; `None` if unknown.
pub fn describe(id: SourceId) -> Option<String> {
    for (tag, v) in [
        ("kv/read", kv(KvOpKind::Read)),
        ("kv/write", kv(KvOpKind::Write)),
        ("pagecache", page_cache()),
        ("packet", packet()),
        ("runqueue", runqueue()),
    ] {
        if v == id {
            return Some(tag.to_string());
        }
    }
    for op in BlockOp::ALL {
        if blockio(op) == id {
            return Some(format!("blockio/{}", op.name()));
        }
    }
    (0..1024u32)
        .find(|&nr| syscall(nr) == id)
        .map(|nr| format!("syscall/{nr}"))
}

impl Record {
    /// Stable source id of the record's stream (see [`crate::source`]).
    /// Here, not in `record`, so record kinds know nothing of source ids
    /// (no `record ↔ source` import cycle).
    pub fn source_id(&self) -> SourceId {
        match self {
            Record::KvOp(r) => kv(r.op),
            Record::Syscall(r) => syscall(r.nr),
            Record::PageCache(_) => page_cache(),
            Record::Packet(_) => packet(),
            Record::BlockIo(r) => blockio(r.op),
            Record::RunQueue(_) => runqueue(),
            Record::AgentStat(a) => agent(a.probe, a.stage),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn ids_are_distinct_and_describable() {
        let ids = [
            kv(KvOpKind::Read),
            kv(KvOpKind::Write),
            syscall(17),
            syscall(0),
            page_cache(),
            packet(),
        ];
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(describe(syscall(17)).as_deref(), Some("syscall/17"));
        assert_eq!(describe(kv(KvOpKind::Read)).as_deref(), Some("kv/read"));
        assert_eq!(describe(12345), None);
    }
}
