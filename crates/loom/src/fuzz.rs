//! Bodies of the fuzz targets for the engine's decoders of outside bytes,
//! shared by the cargo-fuzz targets (`loom/fuzz/`, nightly) and the stable
//! `fuzz-smoke` driver, so both run the same checks. Built only with the
//! `fuzz` feature.
//!
//! A body returns normally for any input; it panics only when the engine
//! panics or breaks a property checked here, which is what a fuzzer reports.

use std::io;
use std::path::Path;

use crate::{Config, FlushMode, IndexMode, RangeIndexSpec};

/// File name of the first segment, the one `open_segment` writes.
pub const FIRST_SEGMENT: &str = "segment-00000000.log";

/// The small layout the segment target opens stores with: 512-byte chunks,
/// 8 KiB blocks, 32 KiB segments, so a short input spans several blocks.
pub fn segment_config() -> Config {
    Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Buffered,
        sync_data: false,
        ..Config::default()
    }
}

/// Index value of the fuzzed stores: the first 8 bytes of a record, 0 if
/// shorter.
pub fn first_u64(b: &[u8]) -> u64 {
    b.first_chunk::<8>().map_or(0, |h| u64::from_le_bytes(*h))
}

/// Any bytes as the first segment file of a store in `dir` (which must be
/// empty): opening the store with [`segment_config`], declaring every
/// recovered source with a range index and querying it must return results
/// or errors, never panic; a full scan reports as many records as it visits,
/// and no more than the source holds. Leaves `dir` empty again. Errors are
/// only those of preparing or clearing `dir`.
pub fn open_segment(dir: &Path, data: &[u8]) -> io::Result<()> {
    std::fs::write(dir.join(FIRST_SEGMENT), data)?;
    if let Ok((mut w, r)) = crate::open(dir, segment_config()) {
        let spec = RangeIndexSpec {
            extractor: first_u64,
            min: 0,
            interval: 64,
            n_bins: 16,
        };
        for id in r.sources() {
            let _ = w.declare_source(id, Some(spec));
            let mut visited = 0u64;
            if let Ok(stats) = r.scan(id, 0, u64::MAX, |_, _| visited += 1) {
                assert_eq!(stats.records_scanned, visited, "scan of {id:?}");
                let held = r.snapshot().record_count(id);
                assert!(visited <= held, "{id:?}: scanned {visited} of {held}");
            }
            let _ = r.percentile(id, 0, u64::MAX, 0.99);
            let _ = r.count_matching(id, 0, u64::MAX, 10, 500, IndexMode::NoIndex);
            let _ = r.count_matching(id, 0, u64::MAX, 10, 500, IndexMode::TimeRange);
        }
        let _ = w.close();
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}
