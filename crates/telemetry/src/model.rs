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

use crate::record::{BlockOp, Kind, KvOpKind, Record};

/// Storage type of a field inside a record's bytes (little endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 64-bit integer.
    I64,
    /// IEEE 754 double.
    F64,
}

impl FieldType {
    /// Width in bytes.
    pub fn width(self) -> usize {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::F64 => 8,
        }
    }

    /// Lowercase name (`u8` … `f64`).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::U8 => "u8",
            FieldType::U16 => "u16",
            FieldType::U32 => "u32",
            FieldType::U64 => "u64",
            FieldType::I64 => "i64",
            FieldType::F64 => "f64",
        }
    }
}

/// One field of a series: a name and where its value sits in the record bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Field name as users write it (`duration_us`).
    pub name: &'static str,
    /// Byte offset inside the stored record.
    pub offset: usize,
    /// Storage type.
    pub ty: FieldType,
}

/// A field value read from record bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue {
    /// Unsigned integer fields (u8 … u64).
    Unsigned(u64),
    /// `i64` fields.
    Signed(i64),
    /// `f64` fields.
    Float(f64),
}

impl Field {
    /// The field's value in `bytes`, `None` when `bytes` is too short.
    pub fn read(&self, bytes: &[u8]) -> Option<FieldValue> {
        let b = bytes.get(self.offset..self.offset + self.ty.width())?;
        let mut a = [0u8; 8];
        a[..b.len()].copy_from_slice(b);
        let raw = u64::from_le_bytes(a);
        Some(match self.ty {
            FieldType::U8 | FieldType::U16 | FieldType::U32 | FieldType::U64 => {
                FieldValue::Unsigned(raw)
            }
            FieldType::I64 => FieldValue::Signed(raw as i64),
            FieldType::F64 => FieldValue::Float(f64::from_bits(raw)),
        })
    }
}

/// Range index of a series: bins over one unsigned field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeIndex {
    /// The indexed field (one of the series' fields).
    pub field: &'static str,
    /// Lower bound of the first regular bin.
    pub min: u64,
    /// Width of each regular bin.
    pub interval: u64,
    /// Number of regular bins.
    pub n_bins: u32,
}

/// Width of a latency bin, µs.
pub const LATENCY_BIN_US: u64 = 10;
/// Regular latency bins: 0..100 ms in 10 µs steps. Tail percentiles (p99.99 of
/// KV reads and `pread64` lie in the milliseconds) then fall in a narrow bin
/// that few chunks hold, instead of an overflow bin that every chunk holds.
pub const LATENCY_BINS: u32 = 10_000;

const LATENCY_INDEX: RangeIndex = RangeIndex {
    field: "duration_us",
    min: 0,
    interval: LATENCY_BIN_US,
    n_bins: LATENCY_BINS,
};

/// Fields of `kv` (24-byte [`crate::KvOp`] encoding).
pub const KV_FIELDS: &[Field] = &[
    Field {
        name: "thread_id",
        offset: 0,
        ty: FieldType::U32,
    },
    Field {
        name: "start_us",
        offset: 8,
        ty: FieldType::U64,
    },
    Field {
        name: "duration_us",
        offset: 16,
        ty: FieldType::U64,
    },
];

/// Fields of `syscall` (28-byte [`crate::Syscall`] encoding).
pub const SYSCALL_FIELDS: &[Field] = &[
    Field {
        name: "pid",
        offset: 0,
        ty: FieldType::U32,
    },
    Field {
        name: "tid",
        offset: 4,
        ty: FieldType::U32,
    },
    Field {
        name: "start_us",
        offset: 12,
        ty: FieldType::U64,
    },
    Field {
        name: "duration_us",
        offset: 20,
        ty: FieldType::U64,
    },
];

/// Fields of `pagecache` (44-byte [`crate::PageCache`] encoding).
pub const PAGECACHE_FIELDS: &[Field] = &[
    Field {
        name: "pid",
        offset: 0,
        ty: FieldType::U32,
    },
    Field {
        name: "tid",
        offset: 4,
        ty: FieldType::U32,
    },
    Field {
        name: "pfn",
        offset: 16,
        ty: FieldType::U64,
    },
    Field {
        name: "inode",
        offset: 24,
        ty: FieldType::U64,
    },
    Field {
        name: "index",
        offset: 32,
        ty: FieldType::U64,
    },
    Field {
        name: "device",
        offset: 40,
        ty: FieldType::U32,
    },
];

/// Fields of `packet` (48-byte [`crate::Packet`] encoding). The addresses are not
/// fields: they are 16-byte values, not numbers.
pub const PACKET_FIELDS: &[Field] = &[
    Field {
        name: "src_port",
        offset: 32,
        ty: FieldType::U16,
    },
    Field {
        name: "dst_port",
        offset: 34,
        ty: FieldType::U16,
    },
    Field {
        name: "length",
        offset: 36,
        ty: FieldType::U32,
    },
];

/// Fields of `blockio` (44-byte [`crate::BlockIo`] encoding).
pub const BLOCKIO_FIELDS: &[Field] = &[
    Field {
        name: "pid",
        offset: 0,
        ty: FieldType::U32,
    },
    Field {
        name: "tid",
        offset: 4,
        ty: FieldType::U32,
    },
    Field {
        name: "device",
        offset: 8,
        ty: FieldType::U32,
    },
    Field {
        name: "bytes",
        offset: 12,
        ty: FieldType::U32,
    },
    Field {
        name: "sector",
        offset: 20,
        ty: FieldType::U64,
    },
    Field {
        name: "start_us",
        offset: 28,
        ty: FieldType::U64,
    },
    Field {
        name: "latency_us",
        offset: 36,
        ty: FieldType::U64,
    },
];

/// Fields of `runqueue` (28-byte [`crate::RunQueue`] encoding).
pub const RUNQUEUE_FIELDS: &[Field] = &[
    Field {
        name: "pid",
        offset: 0,
        ty: FieldType::U32,
    },
    Field {
        name: "tid",
        offset: 4,
        ty: FieldType::U32,
    },
    Field {
        name: "cpu",
        offset: 8,
        ty: FieldType::U32,
    },
    Field {
        name: "start_us",
        offset: 12,
        ty: FieldType::U64,
    },
    Field {
        name: "latency_us",
        offset: 20,
        ty: FieldType::U64,
    },
];

/// Fields of `agent` (32-byte [`crate::AgentStat`] encoding).
pub const AGENT_FIELDS: &[Field] = &[
    Field {
        name: "events",
        offset: 16,
        ty: FieldType::U64,
    },
    Field {
        name: "dropped",
        offset: 24,
        ty: FieldType::U64,
    },
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
    pub fields: &'static [Field],
    /// Range index, if the series has one.
    pub index: Option<RangeIndex>,
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
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
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
        index: Some(RangeIndex {
            field: "dst_port",
            min: 0,
            interval: 1,
            n_bins: 65_536,
        }),
    }
}

/// Series of block I/O requests of `op`, range-indexed on their latency.
pub fn blockio(op: BlockOp) -> Series {
    Series {
        measurement: "blockio",
        tags: vec![("op", op.name().to_string())],
        fields: BLOCKIO_FIELDS,
        index: Some(RangeIndex {
            field: "latency_us",
            ..LATENCY_INDEX
        }),
    }
}

/// Series of run-queue waits, range-indexed on their latency.
pub fn runqueue() -> Series {
    Series {
        measurement: "runqueue",
        tags: Vec::new(),
        fields: RUNQUEUE_FIELDS,
        index: Some(RangeIndex {
            field: "latency_us",
            ..LATENCY_INDEX
        }),
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
pub fn fields_of(kind: Kind) -> &'static [Field] {
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

    fn value(f: &Field, bytes: &[u8]) -> u64 {
        match f.read(bytes) {
            Some(FieldValue::Unsigned(v)) => v,
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
            let ix = series.index.expect("indexed series");
            let f = series.field(ix.field).expect("index field exists");
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
