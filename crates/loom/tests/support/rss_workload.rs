//! What the index-memory test's child process writes and asks, shared by
//! the child binary (`loom-rss-child`) and `tests/index_rss.rs`, which
//! rebuilds every record from its number to answer by brute force.
#![allow(dead_code)]

use loom::{Config, FieldDef, FieldType, IndexDef, SourceId, SourceSchema};

use super::common::mix;

/// Sources written, ids `0..SOURCES`.
pub const SOURCES: u64 = 4;

/// Records written: enough that the store's summaries are over ten times
/// the reopening process's budget (about 5 B of summaries per record:
/// every chunk touches ~300 bins of 48 B).
pub const RECORDS: u64 = 24_000_000;

/// The writer persists after every this many records.
pub const PERSIST_EVERY: u64 = 2_000_000;

/// Index-cache budget of the reopening process.
pub const INDEX_BUDGET: usize = 8 << 20;

/// What the reopening process may hold beyond its index budget (the
/// issue's bound: budget + 64 MB), chunk cache included.
pub const BEYOND_BUDGET: usize = 64_000_000;

/// Quantile every window is asked for.
pub const Q: f64 = 0.9999;

/// Record `i`: its source, time (µs, 8 records per µs) and indexed value,
/// a latency of 0–3 ms with one in a thousand up to 90 ms.
pub fn nth(i: u64) -> (SourceId, u64, u64) {
    let h = mix(i);
    let value = if (h >> 40).is_multiple_of(1000) {
        (h >> 8) % 90_000
    } else {
        (h >> 8) % 3000
    };
    (SourceId(h % SOURCES), i / 8, value)
}

/// The record's bytes: its value, then 16 bytes that follow from it (24 B,
/// a KV op's size).
pub fn bytes(value: u64) -> Vec<u8> {
    super::common::record(value, 16)
}

/// A KV-op-like schema whose range index (bins of 10 µs up to 10 ms; the
/// outliers fall in the overflow bin) is stored in the catalog, as
/// loom-app declares its series, so a reopen pages its summaries.
pub fn schema(s: u64) -> SourceSchema {
    SourceSchema {
        measurement: "kv".into(),
        tags: vec![("op".into(), format!("op{s}"))],
        fields: vec![FieldDef {
            name: "latency_us".into(),
            offset: 0,
            ty: FieldType::U64,
        }],
        index: Some(IndexDef {
            field: "latency_us".into(),
            min: 0,
            interval: 10,
            n_bins: 1000,
        }),
    }
}

/// Small blocks and 8 MiB segments, so the store has dozens of complete
/// segments whose summaries the reopening process pages.
pub fn write_config() -> Config {
    Config {
        block_size: 1 << 20,
        segment_size: 8 << 20,
        ..Config::default()
    }
}

/// The reopening process: the test's budget, and a chunk cache that fits
/// in what it may hold beyond the budget.
pub fn read_config() -> Config {
    Config {
        index_cache_bytes: INDEX_BUDGET,
        chunk_cache_bytes: 8 << 20,
        ..Config::default()
    }
}

/// Windows asked (inclusive µs), every source each: three P1-style ones
/// among old data and the whole store (which pages every segment in).
pub fn windows() -> Vec<(u64, u64)> {
    let span = RECORDS / 8;
    vec![
        (span / 10, span / 10 + span / 40),
        (span / 3, span / 3 + span / 40),
        (span / 2, span / 2 + span / 100),
        (0, u64::MAX),
    ]
}
