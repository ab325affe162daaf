//! The small store the fuzz bodies query: every field type, tags, an
//! indexed field, a few series of a few hundred records, so planning and
//! execution run for real and each input stays fast.

use crate::error::{Error, Result};
use loom::{
    Config, FieldDef, FieldType, IndexDef, Reader, RecordBuilder, SourceId, SourceSchema, Writer,
};

/// Records per series.
const RECORDS: u64 = 200;

/// A store in a scratch directory, open for reading and writing.
pub struct Fixture {
    /// Reads the store.
    pub reader: Reader,
    _writer: Writer,
    _dir: tempfile::TempDir,
}

fn field(name: &str, offset: u32, ty: FieldType) -> FieldDef {
    FieldDef {
        name: name.to_string().into(),
        offset,
        ty,
    }
}

fn kv(op: &str) -> SourceSchema {
    SourceSchema {
        measurement: "kv".into(),
        tags: vec![("op".into(), op.into())],
        fields: vec![field("duration_us", 0, FieldType::U64)],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 64,
        }),
    }
}

fn sys(host: &str) -> SourceSchema {
    SourceSchema {
        measurement: "sys".into(),
        tags: vec![("host".into(), host.into()), ("comm".into(), "db".into())],
        fields: vec![
            field("ret", 0, FieldType::I64),
            field("load", 8, FieldType::F64),
            field("nr", 16, FieldType::U32),
            field("comm_name", 20, FieldType::String),
        ],
        index: None,
    }
}

impl Fixture {
    /// Builds the store (kv: two series; sys: two series with every other
    /// field type), records at 1 s … 200 s.
    pub fn new() -> Result<Fixture> {
        let dir = tempfile::tempdir()
            .map_err(|e| Error::Engine(format!("a scratch directory for the fixture: {e}")))?;
        let (mut w, reader) = loom::open(dir.path(), Config::default())?;
        let reads = w.declare(SourceId(1), kv("read"))?;
        let writes = w.declare(SourceId(2), kv("write"))?;
        let hosts = [
            w.declare(SourceId(3), sys("a"))?,
            w.declare(SourceId(4), sys("b\u{e9}"))?,
        ];
        let mut b = RecordBuilder::new();
        for i in 1..=RECORDS {
            let t = i * 1_000_000;
            w.push(reads, t, &(i * 7 % 500).to_le_bytes())?;
            w.push(writes, t + 500, &(i * 13 % 300).to_le_bytes())?;
            for (k, h) in hosts.iter().enumerate() {
                b.start(28);
                b.i64(0, i as i64 - 100);
                b.f64(8, i as f64 / 3.0);
                b.u32(16, (i % 450) as u32);
                b.str(
                    20,
                    if (i + k as u64).is_multiple_of(2) {
                        "db"
                    } else {
                        "web'\"\\"
                    },
                );
                w.push(*h, t + k as u64, b.bytes())?;
            }
        }
        w.sync();
        Ok(Fixture {
            reader,
            _writer: w,
            _dir: dir,
        })
    }
}
