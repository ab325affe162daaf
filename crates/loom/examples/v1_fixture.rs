//! Writes `tests/fixtures/v1-store` (see `tests/common/v1_fixture.rs`): run
//! once with the version-1 (uncompressed) format to make the fixture.

#[path = "../tests/common/v1_fixture.rs"]
mod v1_fixture;

use loom::{Config, FlushMode, RangeIndexSpec};
use v1_fixture::*;

fn main() -> loom::Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-store");
    let config = Config {
        chunk_size: 1024,
        block_size: 8192,
        segment_size: 8192 * 4,
        flush_mode: FlushMode::Buffered,
        ..Config::default()
    };
    let (mut w, _r) = loom::open(&dir, config)?;
    let a = w.declare(SCHEMA_SOURCE, schema())?;
    let spec = RangeIndexSpec {
        extractor: raw_value,
        min: 0,
        interval: 100,
        n_bins: 10,
    };
    let b = w.declare_source(RAW_SOURCE, Some(spec))?;
    for i in 0..RECORDS {
        let (t, r) = schema_record(i);
        w.push(a, t, &r)?;
        let (t, r) = raw_record(i);
        w.push(b, t, &r)?;
        if i == RECORDS / 2 {
            w.persist()?;
        }
    }
    w.close()
}
