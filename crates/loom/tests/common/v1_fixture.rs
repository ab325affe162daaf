//! The records of `tests/fixtures/v1-store`: a store written by the
//! uncompressed format (version 1, before compressed chunks), kept so every
//! later format is checked to open it and answer the same. The store was
//! made by `cargo run -p loom --example v1_fixture` at commit cd5e438 (the
//! last commit writing version 1); this module regenerates the same records
//! so tests compare the store's answers with brute force.

use loom::{FieldDef, FieldType, IndexDef, SourceId, SourceSchema};

/// Source with a schema (u32, u64 latency with a range index, a string).
pub const SCHEMA_SOURCE: SourceId = SourceId(0x5eed_0001);
/// Source declared with an extractor only (first 8 bytes), no schema.
pub const RAW_SOURCE: SourceId = SourceId(0x5eed_0002);
/// Records per source.
pub const RECORDS: u64 = 3_000;

/// The schema of [`SCHEMA_SOURCE`].
pub fn schema() -> SourceSchema {
    let f = |name: &str, offset: u32, ty: FieldType| FieldDef {
        name: name.to_string().into(),
        offset,
        ty,
    };
    SourceSchema {
        measurement: "fixture".into(),
        tags: vec![("kind".into(), "v1".into())],
        fields: vec![
            f("tid", 0, FieldType::U32),
            f("latency_us", 4, FieldType::U64),
            f("note", 12, FieldType::String),
        ],
        index: Some(IndexDef {
            field: "latency_us".into(),
            min: 0,
            interval: 10,
            n_bins: 50,
        }),
    }
}

/// Record `i` of [`SCHEMA_SOURCE`]: `(timestamp_us, bytes)`.
pub fn schema_record(i: u64) -> (u64, Vec<u8>) {
    let note = format!("n{}", i % 17);
    let mut b = Vec::new();
    b.extend_from_slice(&((i % 4) as u32 + 100).to_le_bytes());
    b.extend_from_slice(&((i * 7919) % 613).to_le_bytes());
    let start = 20u32;
    b.extend_from_slice(&start.to_le_bytes());
    b.extend_from_slice(&(note.len() as u32).to_le_bytes());
    b.extend_from_slice(note.as_bytes());
    (1_000_000 + i * 13 + (i % 5), b)
}

/// Record `i` of [`RAW_SOURCE`]: `(timestamp_us, bytes)`.
pub fn raw_record(i: u64) -> (u64, Vec<u8>) {
    let v = (i * 2_654_435_761) % 1_000;
    let mut b = v.to_le_bytes().to_vec();
    b.extend((0..(i % 9)).map(|k| (k * 3 + i) as u8));
    (1_000_000 + i * 11, b)
}

/// Value of a [`RAW_SOURCE`] record: its first 8 bytes.
pub fn raw_value(b: &[u8]) -> u64 {
    b.get(..8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}
