//! Brute-force model of a store, shared by the behaviour tests.
#![allow(dead_code)]

pub mod schema_store;
pub mod v1_fixture;

use loom::{
    Aggregate, Config, FieldDef, FieldType, FlushMode, IndexDef, RangeIndexSpec, SourceId,
    SourceSchema,
};

/// A declared schema of measurement `measurement` with one tag: a u64
/// `value` at offset 0 (as [`value_of`] reads it), range-indexed in
/// `n_bins` bins of `interval` from `min`.
pub fn indexed_schema(
    measurement: &str,
    (tag, tag_value): (&str, &str),
    (min, interval, n_bins): (u64, u64, u32),
) -> SourceSchema {
    SourceSchema {
        measurement: measurement.into(),
        tags: vec![(tag.into(), tag_value.into())],
        fields: vec![FieldDef {
            name: "value".into(),
            offset: 0,
            ty: FieldType::U64,
        }],
        index: Some(IndexDef {
            field: "value".into(),
            min,
            interval,
            n_bins,
        }),
    }
}

/// Value of a test record: its first 8 bytes, little-endian (0 if shorter).
pub fn value_of(b: &[u8]) -> u64 {
    match b.get(..8) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        }
        None => 0,
    }
}

/// A small layout so a few thousand records span many chunks, blocks and
/// segment files.
pub fn small_config() -> Config {
    Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Direct,
        sync_data: false,
        max_index_lag: 16,
        sync_interval_ms: 1000,
        // Open chunks start at 64 bytes and double up to the chunk size,
        // so every test also covers grown (and shrunk) chunk buffers.
        first_chunk_bytes: 64,
        ..Config::default()
    }
}

pub fn spec() -> RangeIndexSpec {
    RangeIndexSpec {
        extractor: value_of,
        min: 100,
        interval: 50,
        n_bins: 20,
    }
}

pub fn record(value: u64, extra: usize) -> Vec<u8> {
    let mut b = value.to_le_bytes().to_vec();
    b.extend((0..extra).map(|i| (i as u8).wrapping_mul(31).wrapping_add(value as u8)));
    b
}

/// A 64-bit finaliser (splitmix/murmur style): a cheap, well-spread hash.
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

/// Every pushed record, in push order.
#[derive(Default, Clone)]
pub struct Model {
    pub records: Vec<(SourceId, u64, Vec<u8>)>,
}

impl Model {
    pub fn window(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
    ) -> impl Iterator<Item = &(SourceId, u64, Vec<u8>)> {
        self.records
            .iter()
            .filter(move |(s, t, _)| *s == id && *t >= t0 && *t <= t1)
    }

    pub fn aggregate(&self, id: SourceId, t0: u64, t1: u64) -> Aggregate {
        let mut a = Aggregate::default();
        for (_, _, b) in self.window(id, t0, t1) {
            a.add(value_of(b));
        }
        a
    }

    pub fn percentile(&self, id: SourceId, t0: u64, t1: u64, q: f64) -> Option<u64> {
        let mut v: Vec<u64> = self
            .window(id, t0, t1)
            .map(|(_, _, b)| value_of(b))
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let k = loom::nearest_rank(q, v.len() as u64);
        Some(v[(k - 1) as usize])
    }

    pub fn range(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        lo: u64,
        hi: u64,
    ) -> Vec<(u64, u64, Vec<u8>)> {
        self.window(id, t0, t1)
            .filter(|(_, _, b)| (lo..=hi).contains(&value_of(b)))
            .map(|(_, t, b)| (*t, value_of(b), b.clone()))
            .collect()
    }

    pub fn scan(&self, id: SourceId, t0: u64, t1: u64) -> Vec<(u64, Vec<u8>)> {
        self.window(id, t0, t1)
            .map(|(_, t, b)| (*t, b.clone()))
            .collect()
    }

    pub fn max_ts(&self) -> u64 {
        self.records.iter().map(|r| r.1).max().unwrap_or(0)
    }
}
