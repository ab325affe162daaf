//! What the crash test's child writes, shared by the child binary
//! (`loom-crash-child`) and the test that checks what survived.
#![allow(dead_code)]

use loom::{Config, FlushMode};

use super::common::record;

/// Sources the child writes to, ids `0..SOURCES`.
pub const SOURCES: u64 = 3;

/// The child persists after every this many pushes and then prints
/// `persisted <count of source 0> <count of source 1> ...`.
pub const PERSIST_EVERY: u64 = 3000;

pub use super::common::mix;

/// The k-th record of source s: (timestamp, bytes). A pure function, so the
/// parent can rebuild what the child pushed from the record counts alone.
pub fn nth(s: u64, k: u64) -> (u64, Vec<u8>) {
    let h = mix(s << 48 ^ k);
    (k * 2 + (h & 1), record(h % 2000, (h >> 20) as usize % 16))
}

/// Small chunks, blocks and segments, so a kill lands in every phase of the
/// write path (sealing, rotating blocks, flushing, starting a segment).
pub fn config() -> Config {
    Config {
        chunk_size: 1024,
        block_size: 16384,
        segment_size: 16384 * 8,
        max_blocks_in_memory: 3,
        flush_mode: FlushMode::Direct,
        sync_data: false,
        max_index_lag: 64,
        sync_interval_ms: 1000,
        // Open chunks start at 64 bytes and double up to the chunk size,
        // so every test also covers grown (and shrunk) chunk buffers.
        first_chunk_bytes: 64,
        ..Config::default()
    }
}
