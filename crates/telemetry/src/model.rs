//! The data model users and InfluxQL see: every source is one series, a
//! measurement plus a fixed tag set, whose fields are read from the record's
//! stored bytes at fixed offsets (the encodings in [`crate::record`]).
//!
//! | source | measurement | tags | fields | range index on |
//! | --- | --- | --- | --- | --- |
//! | `kv/read`, `kv/write` | `kv` | `op` | `thread_id`, `start_us`, `duration_us` | `duration_us` |
//! | `syscall/N` | `syscall` | `nr`, `name` | `pid`, `tid`, `start_us`, `duration_us` | `duration_us` |
//! | `pagecache` | `pagecache` | none | `pid`, `tid`, `pfn`, `inode`, `index`, `device` | none |
//! | `packet` | `packet` | none | `src_port`, `dst_port`, `length` | `dst_port` |
//! | `blockio/OP` | `blockio` | `op` (`read`, `write`, `flush`, `discard`, `other`) | `pid`, `tid`, `device`, `bytes`, `sector`, `start_us`, `latency_us` | `latency_us` |
//! | `runqueue` | `runqueue` | none | `pid`, `tid`, `cpu`, `start_us`, `latency_us` | `latency_us` |
//! | `agent/PROBE/STAGE` | `agent` | `probe`, `stage` (`kernel`, `queue`, `send`) | `events`, `dropped` (per interval) | none |
//!
//! A sender on wire protocol version 2 adds tags to its series (see
//! [`crate::wire::SeriesTags`]): `host` on every series of the connection
//! and `comm` (the process name) on `loom-agent`'s and the workloads'
//! series, so one statement (`WHERE comm = 'postgres' AND host = 'db-3'`)
//! works on both. The keys come from [`EXTRA_TAG_KEYS`].
//!
//! Loom's InfluxQL endpoint and `influx-app` (which writes the same records to
//! InfluxDB) both take their names from here, so one statement runs unchanged
//! on both systems.

use loom::SourceSchema;

use crate::record::{BlockOp, Kind, KvOpKind, Record};

pub use loom::{FieldDef, FieldType, IndexDef, Value};

/// Width of a latency bin, µs.
pub const LATENCY_BIN_US: u64 = 10;
/// Regular latency bins: 0..100 ms in 10 µs steps. Tail percentiles (p99.99 of
/// KV reads and `pread64` lie in the milliseconds) then fall in a narrow bin
/// that few chunks hold, instead of an overflow bin that every chunk holds.
pub const LATENCY_BINS: u32 = 10_000;

const LATENCY_INDEX: IndexDef = IndexDef::new("duration_us", 0, LATENCY_BIN_US, LATENCY_BINS);

/// Fields of `kv` (24-byte [`crate::KvOp`] encoding).
pub const KV_FIELDS: &[FieldDef] = &[
    FieldDef::new("thread_id", 0, FieldType::U32),
    FieldDef::new("start_us", 8, FieldType::U64),
    FieldDef::new("duration_us", 16, FieldType::U64),
];

/// Fields of `syscall` (28-byte [`crate::Syscall`] encoding).
pub const SYSCALL_FIELDS: &[FieldDef] = &[
    FieldDef::new("pid", 0, FieldType::U32),
    FieldDef::new("tid", 4, FieldType::U32),
    FieldDef::new("start_us", 12, FieldType::U64),
    FieldDef::new("duration_us", 20, FieldType::U64),
];

/// Fields of `pagecache` (44-byte [`crate::PageCache`] encoding).
pub const PAGECACHE_FIELDS: &[FieldDef] = &[
    FieldDef::new("pid", 0, FieldType::U32),
    FieldDef::new("tid", 4, FieldType::U32),
    FieldDef::new("pfn", 16, FieldType::U64),
    FieldDef::new("inode", 24, FieldType::U64),
    FieldDef::new("index", 32, FieldType::U64),
    FieldDef::new("device", 40, FieldType::U32),
];

/// Fields of `packet` (48-byte [`crate::Packet`] encoding). The addresses are not
/// fields: they are 16-byte values, not numbers.
pub const PACKET_FIELDS: &[FieldDef] = &[
    FieldDef::new("src_port", 32, FieldType::U16),
    FieldDef::new("dst_port", 34, FieldType::U16),
    FieldDef::new("length", 36, FieldType::U32),
];

/// Fields of `blockio` (44-byte [`crate::BlockIo`] encoding).
pub const BLOCKIO_FIELDS: &[FieldDef] = &[
    FieldDef::new("pid", 0, FieldType::U32),
    FieldDef::new("tid", 4, FieldType::U32),
    FieldDef::new("device", 8, FieldType::U32),
    FieldDef::new("bytes", 12, FieldType::U32),
    FieldDef::new("sector", 20, FieldType::U64),
    FieldDef::new("start_us", 28, FieldType::U64),
    FieldDef::new("latency_us", 36, FieldType::U64),
];

/// Fields of `runqueue` (28-byte [`crate::RunQueue`] encoding).
pub const RUNQUEUE_FIELDS: &[FieldDef] = &[
    FieldDef::new("pid", 0, FieldType::U32),
    FieldDef::new("tid", 4, FieldType::U32),
    FieldDef::new("cpu", 8, FieldType::U32),
    FieldDef::new("start_us", 12, FieldType::U64),
    FieldDef::new("latency_us", 20, FieldType::U64),
];

/// Fields of `agent` (32-byte [`crate::AgentStat`] encoding).
pub const AGENT_FIELDS: &[FieldDef] = &[
    FieldDef::new("events", 16, FieldType::U64),
    FieldDef::new("dropped", 24, FieldType::U64),
];

/// Series of an agent's counts of probe `probe` at stage `stage` (codes of
/// [`crate::AgentStat`]); no index (its questions sum).
pub fn agent(probe: u8, stage: u8) -> Series {
    use crate::record::agent_names::{PROBES, STAGES};
    let name = |names: &[&str], i: u8| names.get(usize::from(i)).unwrap_or(&"?").to_string();
    Series {
        measurement: "agent",
        tags: vec![
            ("probe", name(&PROBES, probe)),
            ("stage", name(&STAGES, stage)),
        ],
        fields: AGENT_FIELDS,
        index: None,
    }
}

/// Tag keys a sender may add to its series (wire protocol version 2): the
/// host, the process name, and names of what the process belongs to. A
/// fixed vocabulary, so no added key can shadow a series' own tag (`op`,
/// `name`, `nr`).
pub const EXTRA_TAG_KEYS: &[&str] = &["host", "comm", "cgroup", "unit", "container", "service"];

/// The key of [`EXTRA_TAG_KEYS`] equal to `key`.
pub fn extra_tag_key(key: &str) -> Option<&'static str> {
    EXTRA_TAG_KEYS.iter().copied().find(|k| *k == key)
}

/// One series of the data model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// Measurement name (`kv`, `syscall`, `pagecache`, `packet`).
    pub measurement: &'static str,
    /// Tag keys and values, sorted by key.
    pub tags: Vec<(&'static str, String)>,
    /// Fields, in record order.
    pub fields: &'static [FieldDef],
    /// Range index, if the series has one.
    pub index: Option<IndexDef>,
}

impl Series {
    /// The series with `extra` tags added (keys from [`EXTRA_TAG_KEYS`]),
    /// tags kept sorted by key.
    pub fn with_tags(mut self, extra: &[(&'static str, String)]) -> Series {
        self.tags.extend(extra.iter().cloned());
        self.tags.sort_by(|a, b| a.0.cmp(b.0));
        self
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static FieldDef> {
        loom::find_field(self.fields, name)
    }

    /// The series as an engine schema, the form a store declares and
    /// persists in its catalog.
    pub fn schema(&self) -> SourceSchema {
        SourceSchema {
            measurement: self.measurement.to_string(),
            tags: self
                .tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            fields: self.fields.to_vec(),
            index: self.index.clone(),
        }
    }
}

/// Series of KV reads or KV writes.
pub fn kv(op: KvOpKind) -> Series {
    Series {
        measurement: "kv",
        tags: vec![(
            "op",
            match op {
                KvOpKind::Read => "read",
                KvOpKind::Write => "write",
            }
            .to_string(),
        )],
        fields: KV_FIELDS,
        index: Some(LATENCY_INDEX),
    }
}

/// Series of syscall number `nr` (x86_64 numbering); its `name` tag is the
/// syscall's name, or `sys_N` for numbers the table does not know.
pub fn syscall(nr: u32) -> Series {
    Series {
        measurement: "syscall",
        tags: vec![("name", syscall_name(nr)), ("nr", nr.to_string())],
        fields: SYSCALL_FIELDS,
        index: Some(LATENCY_INDEX),
    }
}

/// Series of page-cache insertions (no index: its questions only count).
pub fn page_cache() -> Series {
    Series {
        measurement: "pagecache",
        tags: Vec::new(),
        fields: PAGECACHE_FIELDS,
        index: None,
    }
}

/// Series of packets, range-indexed on the destination port (one bin per port).
pub fn packet() -> Series {
    Series {
        measurement: "packet",
        tags: Vec::new(),
        fields: PACKET_FIELDS,
        index: Some(IndexDef::new("dst_port", 0, 1, 65_536)),
    }
}

/// Series of block I/O requests of `op`, range-indexed on their latency.
pub fn blockio(op: BlockOp) -> Series {
    Series {
        measurement: "blockio",
        tags: vec![("op", op.name().to_string())],
        fields: BLOCKIO_FIELDS,
        index: Some(IndexDef::new("latency_us", 0, LATENCY_BIN_US, LATENCY_BINS)),
    }
}

/// Series of run-queue waits, range-indexed on their latency.
pub fn runqueue() -> Series {
    Series {
        measurement: "runqueue",
        tags: Vec::new(),
        fields: RUNQUEUE_FIELDS,
        index: Some(IndexDef::new("latency_us", 0, LATENCY_BIN_US, LATENCY_BINS)),
    }
}

/// The x86_64 name of syscall `nr` (`pread64`), `sys_N` when unknown.
pub fn syscall_name(nr: u32) -> String {
    syscalls::x86_64::Sysno::new(nr as usize)
        .map(|s| s.name().to_string())
        .unwrap_or_else(|| format!("sys_{nr}"))
}

/// The x86_64 number of the syscall called `name`, `None` when unknown.
pub fn syscall_nr(name: &str) -> Option<u32> {
    if let Some(n) = name.strip_prefix("sys_").and_then(|n| n.parse().ok()) {
        return Some(n);
    }
    name.parse::<syscalls::x86_64::Sysno>()
        .ok()
        .map(|s| s.id() as u32)
}

impl Record {
    /// The series this record belongs to.
    pub fn series(&self) -> Series {
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

/// The fields of every record of `kind`.
pub fn fields_of(kind: Kind) -> &'static [FieldDef] {
    match kind {
        Kind::KvOp => KV_FIELDS,
        Kind::Syscall => SYSCALL_FIELDS,
        Kind::PageCache => PAGECACHE_FIELDS,
        Kind::Packet => PACKET_FIELDS,
        Kind::BlockIo => BLOCKIO_FIELDS,
        Kind::RunQueue => RUNQUEUE_FIELDS,
        Kind::AgentStat => AGENT_FIELDS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BlockIo, KvOp, Packet, PageCache, RunQueue, Syscall};

    fn value(f: &FieldDef, bytes: &[u8]) -> u64 {
        match f.read(bytes) {
            Some(Value::Unsigned(v)) => v,
            other => panic!("{} read {other:?}", f.name),
        }
    }

    #[test]
    fn fields_read_what_the_encoders_wrote() {
        let mut b = Vec::new();
        KvOp {
            thread_id: 7,
            op: KvOpKind::Write,
            start_us: 123_456,
            duration_us: 789,
        }
        .encode_into(&mut b);
        let got: Vec<u64> = KV_FIELDS.iter().map(|f| value(f, &b)).collect();
        assert_eq!(got, [7, 123_456, 789]);

        let mut b = Vec::new();
        Syscall {
            pid: 1,
            tid: 2,
            nr: 17,
            start_us: 99,
            duration_us: 1234,
        }
        .encode_into(&mut b);
        let got: Vec<u64> = SYSCALL_FIELDS.iter().map(|f| value(f, &b)).collect();
        assert_eq!(got, [1, 2, 99, 1234]);

        let mut b = Vec::new();
        PageCache {
            pid: 3,
            tid: 4,
            timestamp_us: 5,
            pfn: 6,
            inode: 7,
            index: 8,
            device: 9,
        }
        .encode_into(&mut b);
        let got: Vec<u64> = PAGECACHE_FIELDS.iter().map(|f| value(f, &b)).collect();
        assert_eq!(got, [3, 4, 6, 7, 8, 9]);

        let mut b = Vec::new();
        Packet {
            src_addr: [1; 16],
            dst_addr: [2; 16],
            src_port: 80,
            dst_port: 6379,
            length: 1500,
            timestamp_us: 42,
        }
        .encode_into(&mut b);
        let got: Vec<u64> = PACKET_FIELDS.iter().map(|f| value(f, &b)).collect();
        assert_eq!(got, [80, 6379, 1500]);

        let mut b = Vec::new();
        BlockIo {
            pid: 1,
            tid: 2,
            device: 3,
            bytes: 4,
            op: BlockOp::Write,
            sector: 5,
            start_us: 6,
            latency_us: 7,
        }
        .encode_into(&mut b);
        let got: Vec<u64> = BLOCKIO_FIELDS.iter().map(|f| value(f, &b)).collect();
        assert_eq!(got, [1, 2, 3, 4, 5, 6, 7]);

        let mut b = Vec::new();
        RunQueue {
            pid: 1,
            tid: 2,
            cpu: 3,
            start_us: 4,
            latency_us: 5,
        }
        .encode_into(&mut b);
        let got: Vec<u64> = RUNQUEUE_FIELDS.iter().map(|f| value(f, &b)).collect();
        assert_eq!(got, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn index_fields_match_the_kind_extractors() {
        for (series, kind, len) in [
            (kv(KvOpKind::Read), Kind::KvOp, KvOp::ENCODED_LEN),
            (syscall(17), Kind::Syscall, Syscall::ENCODED_LEN),
            (packet(), Kind::Packet, Packet::ENCODED_LEN),
            (blockio(BlockOp::Write), Kind::BlockIo, BlockIo::ENCODED_LEN),
            (runqueue(), Kind::RunQueue, RunQueue::ENCODED_LEN),
        ] {
            let ix = series.index.as_ref().expect("indexed series");
            let f = series.field(&ix.field).expect("index field exists");
            let bytes: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(value(f, &bytes), (kind.extractor())(&bytes), "{kind:?}");
        }
    }

    #[test]
    fn syscall_names_round_trip() {
        assert_eq!(syscall_name(17), "pread64");
        assert_eq!(syscall_name(44), "sendto");
        assert_eq!(syscall_nr("pread64"), Some(17));
        assert_eq!(syscall_nr("sendto"), Some(44));
        assert_eq!(syscall_name(4000), "sys_4000");
        assert_eq!(syscall_nr("sys_4000"), Some(4000));
        assert_eq!(syscall_nr("no_such_call"), None);
        let s = syscall(17);
        assert_eq!(
            s.tags,
            vec![("name", "pread64".into()), ("nr", "17".into())]
        );
    }

    #[test]
    fn short_bytes_read_none() {
        assert_eq!(KV_FIELDS[2].read(&[0u8; 23]), None);
        assert!(KV_FIELDS[2].read(&[0u8; 24]).is_some());
    }
}
