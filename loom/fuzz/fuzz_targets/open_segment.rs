//! Any bytes as a segment file: opening the store and scanning every source
//! must return errors, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loom::{Config, FlushMode, IndexMode, RangeIndexSpec};

fn first_u64(b: &[u8]) -> u64 {
    b.first_chunk::<8>().map_or(0, |h| u64::from_le_bytes(*h))
}

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else { return };
    if std::fs::write(dir.path().join("segment-00000000.log"), data).is_err() {
        return;
    }
    let cfg = Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Buffered,
        sync_data: false,
        ..Config::default()
    };
    let Ok((mut w, r)) = loom::open(dir.path(), cfg) else { return };
    let spec = RangeIndexSpec { extractor: first_u64, min: 0, interval: 64, n_bins: 16 };
    for id in r.sources() {
        let _ = w.declare_source(id, Some(spec));
        let _ = r.scan(id, 0, u64::MAX, |_, _| {});
        let _ = r.percentile(id, 0, u64::MAX, 0.99);
        let _ = r.count_matching(id, 0, u64::MAX, 10, 500, IndexMode::NoIndex);
    }
    let _ = w.close();
});
