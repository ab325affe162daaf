//! A store written by format version 1 (uncompressed segments, kept in
//! `tests/fixtures/v1-store`) opens and answers exactly, read-only and for
//! writing; records written to it afterwards go to compressed segments and
//! both kinds answer together.

mod common;

use std::path::Path;

use common::v1_fixture::*;
use loom::{Aggregate, IndexMode, RangeIndexSpec, Reader, SourceId};

fn fixture_copy() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-store");
    let dir = tempfile::tempdir()?;
    for e in std::fs::read_dir(&src)? {
        let e = e?;
        std::fs::copy(e.path(), dir.path().join(e.file_name()))?;
    }
    Ok(dir)
}

fn latency(b: &[u8]) -> u64 {
    b.get(4..12)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// `(timestamp, bytes)` of a source's records.
type Records = Vec<(u64, Vec<u8>)>;

/// Every record of both sources up to record `n` (exclusive).
fn expected(n: u64) -> [(SourceId, Records); 2] {
    [
        (SCHEMA_SOURCE, (0..n).map(schema_record).collect()),
        (RAW_SOURCE, (0..n).map(raw_record).collect()),
    ]
}

/// Scans, aggregates, percentiles and range counts against brute force.
fn check(r: &Reader, n: u64, raw_indexed: bool) -> Result<(), Box<dyn std::error::Error>> {
    for (id, want) in expected(n) {
        let mut got = Vec::new();
        r.scan(id, 0, u64::MAX, |t, b| got.push((t, b.to_vec())))?;
        assert_eq!(got.len(), want.len(), "{id:?}");
        assert!(got == want, "{id:?}: the records differ");
        let value = if id == SCHEMA_SOURCE {
            latency
        } else {
            raw_value
        };
        if id == RAW_SOURCE && !raw_indexed {
            continue;
        }
        let (first, last) = (want[0].0, want[want.len() - 1].0);
        for (t0, t1) in [
            (0, u64::MAX),
            (first + 977, last - 3_333),
            (last - 500, last),
        ] {
            let mut agg = Aggregate::default();
            let mut values = Vec::new();
            for (t, b) in want.iter().filter(|(t, _)| (t0..=t1).contains(t)) {
                let _ = t;
                agg.add(value(b));
                values.push(value(b));
            }
            assert_eq!(r.aggregate(id, t0, t1)?, agg, "{id:?} [{t0}, {t1}]");
            values.sort_unstable();
            // The schema source's 10 µs bins keep per-value counts in
            // the summaries a later format writes (not in version 1's).
            for q in [0.5, 0.99, 0.9999, 1.0] {
                let k = loom::nearest_rank(q, values.len() as u64);
                let p = values.get((k as usize).wrapping_sub(1)).copied();
                assert_eq!(r.percentile(id, t0, t1, q)?, p, "{id:?} q {q}");
            }
            let (lo, hi) = (120, 400);
            let want_n = values.iter().filter(|v| (lo..=hi).contains(*v)).count() as u64;
            for mode in [
                IndexMode::NoIndex,
                IndexMode::TimeOnly,
                IndexMode::RangeOnly,
                IndexMode::TimeRange,
            ] {
                let c = r.count_matching(id, t0, t1, lo, hi, mode)?;
                assert_eq!(c.count, want_n, "{id:?} {mode:?}");
            }
        }
    }
    Ok(())
}

#[test]
fn a_version_1_store_opens_and_answers_exactly() -> Result<(), Box<dyn std::error::Error>> {
    let dir = fixture_copy()?;
    let r = loom::open_read_only(dir.path())?;
    assert_eq!(r.sources(), vec![SCHEMA_SOURCE, RAW_SOURCE]);
    check(&r, RECORDS, false)?;
    let meta = std::fs::read_to_string(dir.path().join("loom.meta"))?;
    assert!(
        meta.starts_with("loom-store v1"),
        "a reader changes nothing"
    );
    Ok(())
}

#[test]
fn writing_to_a_version_1_store_adds_compressed_segments() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = fixture_copy()?;
    let old: Vec<(std::ffi::OsString, Vec<u8>)> = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| Ok((e.file_name(), std::fs::read(e.path())?)))
        .collect::<std::io::Result<_>>()?;
    let more = RECORDS + 2_000;
    {
        let (mut w, r) = loom::open(dir.path(), loom::Config::default())?;
        assert_eq!(w.recovery().records, 2 * RECORDS);
        let a = w.declare(SCHEMA_SOURCE, schema())?;
        let spec = RangeIndexSpec {
            extractor: raw_value,
            min: 0,
            interval: 100,
            n_bins: 10,
        };
        let b = w.declare_source(RAW_SOURCE, Some(spec))?;
        w.wait_for_index()?;
        check(&r, RECORDS, true)?;
        for i in RECORDS..more {
            let (t, rec) = schema_record(i);
            w.push(a, t, &rec)?;
            let (t, rec) = raw_record(i);
            w.push(b, t, &rec)?;
        }
        w.persist()?;
        w.wait_for_index()?;
        check(&r, more, true)?;
        w.close()?;
    }
    let meta = std::fs::read_to_string(dir.path().join("loom.meta"))?;
    assert!(meta.starts_with("loom-store v3"), "{meta}");
    for (name, bytes) in &old {
        assert!(
            std::fs::read(dir.path().join(name))? == *bytes,
            "{name:?}: a version-1 segment was changed"
        );
    }
    let new_segments: Vec<_> = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .filter(|e| !old.iter().any(|(n, _)| *n == e.file_name()))
        .collect();
    assert!(!new_segments.is_empty());
    for e in &new_segments {
        let head = std::fs::read(e.path())?;
        assert_eq!(&head[..8], b"LOOMSEG2", "{:?}", e.file_name());
        // Their index files are of format 3 (summaries with per-value
        // counts); the version-1 ones beside them are read as they are.
        let idx = e.path().with_extension("idx");
        let head = std::fs::read(&idx)?;
        assert_eq!(&head[..8], b"LOOMSIX3", "{idx:?}");
    }
    // A reader of the mixed store, and a writer reopening it, see all.
    let r = loom::open_read_only(dir.path())?;
    check(&r, more, false)?;
    let (w, r) = loom::open(dir.path(), loom::Config::default())?;
    assert_eq!(w.recovery().records, 2 * more);
    assert!(!w.recovery().lost_anything(), "{:?}", w.recovery());
    check(&r, more, false)?;
    w.close()?;
    Ok(())
}
