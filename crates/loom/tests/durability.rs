//! A store you can come back to: schemas and summaries persist, one writer
//! at a time, read-only opens beside it, retention, and a full disk.

mod common;

use std::path::Path;
use std::process::Command;

use common::schema_store::{check_answers, fill, schema, value};
use common::{record, small_config, Model};
use loom::{Config, Error, IndexMode, Reader, SourceId};

#[test]
fn schemas_and_summaries_come_back_without_declaring() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut model = Model::default();
    let mut w = fill(dir.path(), small_config(), 0, 20_000, &mut model)?;
    w.wait_for_index()?;
    w.close()?;

    // A new writer that declares nothing answers range-index questions.
    let (w, r) = loom::open(dir.path(), small_config())?;
    assert_eq!(
        r.snapshot().schema(SourceId(1)),
        Some(&schema("read").validated()?)
    );
    assert_eq!(w.stats().recovered_records, 20_000);
    assert_eq!(
        w.stats().chunks_reindexed,
        0,
        "a clean close leaves every chunk's summaries on disk"
    );
    let report = w.recovery().clone();
    assert!(report.segments_from_index > 0, "{report:?}");
    assert!(!report.lost_anything(), "{report:?}");
    check_answers(&r, &model)?;
    // Declaring the same schema again is fine, a different one is refused.
    let mut w = w;
    w.declare(SourceId(1), schema("read"))?;
    let mut other = schema("read");
    other.fields[0].offset = 4;
    assert!(matches!(
        w.declare(SourceId(1), other),
        Err(Error::SchemaMismatch(_))
    ));
    w.close()?;
    drop(r);

    // And a read-only open (no writer at all) too.
    let r = loom::open_read_only(dir.path())?;
    check_answers(&r, &model)?;
    Ok(())
}

#[test]
fn a_crash_keeps_persisted_records_and_their_summaries() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut model = Model::default();
    let mut w = fill(dir.path(), small_config(), 0, 15_000, &mut model)?;
    w.persist()?;
    w.wait_for_index()?;
    let persisted = model.clone();
    // Records after the persist may or may not survive: the prefix must.
    let h = w.handle_of(SourceId(1)).ok_or("source 1 has a handle")?;
    w.push(h, 1_000_000, &record(5, 0))?;
    w.simulate_crash();
    let (mut w, r) = loom::open(dir.path(), small_config())?;
    let n = r.snapshot().record_count(SourceId(1)) + r.snapshot().record_count(SourceId(2));
    assert!(n == 15_000 || n == 15_001, "{n} records recovered");
    let mut model = persisted;
    if n == 15_001 {
        model.records.push((SourceId(1), 1_000_000, record(5, 0)));
    }
    let chunks = w.recovery().chunks;
    assert!(
        w.stats().chunks_reindexed * 4 < chunks,
        "most summaries come from disk: {} of {chunks} chunks re-read",
        w.stats().chunks_reindexed
    );
    w.wait_for_index()?;
    check_answers(&r, &model)?;
    w.close()?;
    Ok(())
}

#[test]
fn a_second_writer_is_refused_and_told_who_holds_the_store(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (w, _r) = loom::open(dir.path(), small_config())?;
    match loom::open(dir.path(), small_config()) {
        Err(Error::Locked { holder, .. }) => assert_eq!(holder, Some(std::process::id())),
        Err(e) => return Err(e.into()),
        Ok(_) => panic!("a second writer opened a locked store"),
    }
    let msg = loom::open(dir.path(), small_config())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "{msg}"
    );
    w.close()?;
    let (w, _r) = loom::open(dir.path(), small_config())?;
    w.close()?;
    Ok(())
}

#[test]
fn read_only_opens_see_what_is_durable_while_the_writer_goes_on(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut model = Model::default();
    let mut w = fill(dir.path(), small_config(), 0, 8_000, &mut model)?;
    w.persist()?;
    let first = loom::open_read_only(dir.path())?;
    let h = w.handle_of(SourceId(2)).ok_or("source 2 has a handle")?;
    for i in 0..3_000u64 {
        let b = record(value(i), 3);
        w.push(h, 4_000 + i, &b)?;
        model.records.push((SourceId(2), 4_000 + i, b));
    }
    w.persist()?;
    let second = loom::open_read_only(dir.path())?;
    let count = |r: &Reader| {
        r.snapshot().record_count(SourceId(1)) + r.snapshot().record_count(SourceId(2))
    };
    assert_eq!(
        count(&first),
        8_000,
        "the first reader sees the first persist"
    );
    assert_eq!(count(&second), 11_000, "the second sees both");
    check_answers(&second, &model)?;
    w.close()?;
    Ok(())
}

fn segment_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("segment-"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn retention_holds_the_bound_and_dropped_time_reads_empty() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    let base = small_config();
    let seg = base.segment_size;
    let cfg = Config {
        retention_bytes: Some(4 * seg),
        ..base
    };
    let (mut w, r) = loom::open(dir.path(), cfg.clone())?;
    let h = w.declare(SourceId(1), schema("read"))?;
    let mut max_seen = 0u64;
    let n = 60_000u64;
    for i in 0..n {
        w.push(h, i, &record(value(i), 8))?;
        if i % 500 == 0 {
            w.persist()?;
            max_seen = max_seen.max(segment_bytes(dir.path()));
        }
    }
    w.persist()?;
    assert!(w.stats().segments_dropped > 10, "{:?}", w.stats());
    assert!(
        max_seen <= 5 * seg + 2 * 8192,
        "store grew to {max_seen} bytes with a bound of {}",
        4 * seg
    );
    // The oldest time is gone and reads as empty; the newest is exact.
    assert_eq!(r.aggregate(SourceId(1), 0, 100)?.count, 0);
    assert_eq!(r.percentile(SourceId(1), 0, 100, 0.5)?, None);
    let kept = r.snapshot().retained_count(SourceId(1));
    assert!(kept > 0 && kept < n, "{kept}");
    let (first, last) = r.snapshot().time_span(SourceId(1)).ok_or("a time span")?;
    assert_eq!(last, n - 1);
    assert_eq!(r.aggregate(SourceId(1), first, last)?.count, kept);
    let c = r.count_matching(SourceId(1), 0, n, 0, u64::MAX, IndexMode::NoIndex)?;
    assert_eq!(c.count, kept);
    w.close()?;
    drop(r);
    // Reopening a store whose first segments are gone is no hole.
    let (w, r) = loom::open(dir.path(), cfg)?;
    assert!(w.recovery().holes.is_empty(), "{:?}", w.recovery().holes);
    assert_eq!(r.snapshot().retained_count(SourceId(1)), kept);
    w.close()?;

    // By age: segments whose newest record is older than the bound go.
    let dir = tempfile::tempdir()?;
    let cfg = Config {
        retention_age_us: Some(10_000),
        ..small_config()
    };
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    let h = w.declare(SourceId(1), schema("read"))?;
    for i in 0..50_000u64 {
        w.push(h, i, &record(value(i), 8))?;
    }
    w.persist()?;
    let (first, _) = r.snapshot().time_span(SourceId(1)).ok_or("a time span")?;
    assert!(
        first > 30_000,
        "records older than the bound remain: {first}"
    );
    assert!(first <= 40_000, "too much was dropped: {first}");
    w.close()?;
    Ok(())
}

/// A tmpfs of `size` mounted on `at`, unmounted when dropped.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> Result<SmallDisk, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mounting a {size} tmpfs needs root (this test runs as root in CI): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(SmallDisk(at.to_path_buf()))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_refuses_records_keeps_answering_and_resumes(
) -> Result<(), Box<dyn std::error::Error>> {
    let mount = tempfile::tempdir()?;
    let _disk = SmallDisk::mount(mount.path(), "3m")?;
    let filler = mount.path().join("filler");
    std::fs::write(&filler, vec![7u8; 2 << 20])?;
    let dir = mount.path().join("store");
    let cfg = Config {
        write_retry_ms: 20,
        ..small_config()
    };
    let (mut w, r) = loom::open(&dir, cfg.clone())?;
    let h = w.declare(SourceId(1), schema("read"))?;
    let mut model = Model::default();
    let mut refused = 0u64;
    let mut i = 0u64;
    // Push until the disk is full and memory too.
    while refused < 1000 {
        let b = record(value(i), 16);
        match w.push(h, i, &b) {
            Ok(_) => model.records.push((SourceId(1), i, b)),
            Err(Error::StorageFailing(why)) => {
                assert!(why.contains("No space left"), "{why}");
                refused += 1;
            }
            Err(e) => return Err(e.into()),
        }
        i += 1;
        assert!(i < 5_000_000, "the 3 MiB disk never filled");
    }
    assert_eq!(w.stats().records_refused, refused);
    assert!(w.storage_failing().is_some());
    assert!(matches!(w.persist(), Err(Error::StorageFailing(_))));
    // Still answering over what it has.
    w.sync();
    let end = model.max_ts();
    assert_eq!(
        r.aggregate(SourceId(1), 0, end)?,
        model.aggregate(SourceId(1), 0, end)
    );
    // Space returns: writes resume, nothing accepted is lost.
    std::fs::remove_file(&filler)?;
    let mut resumed = false;
    for _ in 0..200 {
        let b = record(value(i), 16);
        match w.push(h, i, &b) {
            Ok(_) => {
                model.records.push((SourceId(1), i, b));
                resumed = true;
            }
            Err(Error::StorageFailing(_)) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(e) => return Err(e.into()),
        }
        i += 1;
    }
    assert!(resumed, "pushes never succeeded again after space returned");
    w.persist()?;
    w.close()?;
    drop(r);
    let (w, r) = loom::open(&dir, cfg)?;
    let end = model.max_ts();
    assert_eq!(
        r.aggregate(SourceId(1), 0, end)?,
        model.aggregate(SourceId(1), 0, end)
    );
    w.close()?;
    Ok(())
}

#[test]
fn declaring_many_sources_at_once_writes_one_catalog_and_survives_reopen(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (mut w, r) = loom::open(dir.path(), small_config())?;
    let known = w.declare(SourceId(1), schema("read"))?;
    let mut other = schema("read");
    other.fields[0].offset = 4;
    let mut bad = schema("bad");
    bad.measurement.clear();
    let out = w.declare_all(vec![
        (SourceId(1), schema("read")),
        (SourceId(2), schema("write")),
        (SourceId(3), schema("scan")),
        (SourceId(3), schema("scan")),
        (SourceId(4), other.clone()),
        (SourceId(3), other),
        (SourceId(5), bad),
    ])?;
    assert!(matches!(out[0], Ok(h) if h == known));
    let h2 = match &out[1] {
        Ok(h) => *h,
        Err(e) => return Err(format!("source 2: {e}").into()),
    };
    assert!(matches!((&out[2], &out[3]), (Ok(a), Ok(b)) if a == b));
    assert!(out[4].is_ok(), "a new source with its own schema");
    assert!(matches!(out[5], Err(Error::SchemaMismatch(SourceId(3)))));
    assert!(matches!(out[6], Err(Error::InvalidSchema(_))));
    for i in 0..50u64 {
        w.push(h2, i, &record(value(i), 0))?;
    }
    w.sync();
    let snap = r.snapshot();
    assert_eq!(snap.schemas().len(), 4);
    assert_eq!(snap.count(SourceId(2), 0, 100)?, 50);
    // The same handles as one by one, and the index works on the new source.
    assert_eq!(w.declare(SourceId(2), schema("write"))?, h2);
    w.close()?;
    drop(r);
    let r = loom::open_read_only(dir.path())?;
    let snap = r.snapshot();
    let names: Vec<String> = snap
        .schemas()
        .iter()
        .filter_map(|(_, s)| s.tag("op").map(str::to_string))
        .collect();
    assert_eq!(names, vec!["read", "write", "scan", "read"]);
    assert_eq!(
        snap.aggregate(SourceId(2), 0, 100)?.count,
        50,
        "summaries of a source declared in bulk"
    );
    Ok(())
}

/// `retention_bytes` bounds the store's bytes on disk (compressed segments
/// and their index files), not the log's uncompressed size: compressible
/// records keep several times the bound's worth of uncompressed chunks.
#[test]
fn retention_bounds_the_disk_not_the_uncompressed_log() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // Chunks large enough for their frame headers not to dominate.
    let base = Config {
        chunk_size: 4096,
        segment_size: 8192 * 16,
        ..small_config()
    };
    let seg = base.segment_size;
    let bound = 2 * seg;
    let cfg = Config {
        retention_bytes: Some(bound),
        ..base
    };
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    let h = w.declare(SourceId(1), schema("read"))?;
    let mut max_seen = 0u64;
    for i in 0..600_000u64 {
        // Few distinct values: compresses well.
        w.push(h, i, &record(100 + 50 * (i % 4), 8))?;
        if i % 500 == 0 {
            w.persist()?;
            max_seen = max_seen.max(segment_bytes(dir.path()));
        }
    }
    w.persist()?;
    let stats = w.stats();
    assert!(stats.segments_dropped > 0, "{stats:?}");
    assert!(
        max_seen <= bound + seg + 2 * 8192,
        "store grew to {max_seen} bytes on disk with a bound of {bound}"
    );
    let kept = r.snapshot().storage_use(SourceId(1)).ok_or("storage use")?;
    assert!(
        kept.chunk_bytes > 2 * bound,
        "{kept:?}: retention kept only {} uncompressed bytes under a bound of {bound} bytes on disk",
        kept.chunk_bytes
    );
    assert!(kept.stored_bytes <= bound + seg, "{kept:?}");
    w.close()?;
    Ok(())
}

/// Retention frees the in-memory time index and range-index summaries of
/// the chunks it dropped (in whole slabs of 4096 entries), and answers stay
/// exact afterwards.
#[test]
fn retention_frees_the_index_memory_of_dropped_chunks() -> Result<(), Box<dyn std::error::Error>> {
    const SLAB: usize = 4096;
    let dir = tempfile::tempdir()?;
    let cfg = Config {
        retention_bytes: Some(4 * small_config().segment_size),
        ..small_config()
    };
    let (mut w, r) = loom::open(dir.path(), cfg.clone())?;
    let h = w.declare(SourceId(1), schema("read"))?;
    let n = 400_000u64;
    for i in 0..n {
        w.push(h, i, &record(value(i), 8))?;
        if i % 5_000 == 0 {
            w.persist()?;
        }
    }
    w.persist()?;
    w.wait_for_index()?;
    let sealed = w.stats().chunks as usize;
    let snap = r.snapshot();
    let held = snap.index_held(SourceId(1)).ok_or("no index entries")?;
    let (first, last) = snap.time_span(SourceId(1)).ok_or("a time span")?;
    let want = (first..=last)
        .filter(|&i| (200..=900).contains(&value(i)))
        .count() as u64;
    for mode in [IndexMode::TimeRange, IndexMode::NoIndex] {
        let got = r.count_matching(SourceId(1), first, last, 200, 900, mode)?;
        assert_eq!(got.count, want, "{mode:?}");
    }
    w.close()?;
    drop((snap, r));

    // Reopened, the store indexes exactly the chunks it kept.
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    w.wait_for_index()?;
    let kept = r.snapshot().index_held(SourceId(1)).ok_or("reopened")?;
    assert!(
        sealed > 2 * SLAB + kept.chunks,
        "{sealed} chunks sealed, {kept:?} kept: too few to free a slab"
    );
    assert!(
        held.chunks <= kept.chunks + SLAB,
        "{held:?} held, {kept:?} kept"
    );
    assert!(
        held.summarised_chunks <= kept.summarised_chunks + SLAB,
        "{held:?} held, {kept:?} kept"
    );
    assert!(
        held.bin_summaries <= kept.bin_summaries + SLAB + 22,
        "{held:?} held, {kept:?} kept"
    );
    w.close()?;
    Ok(())
}

/// A query on a snapshot taken before retention dropped segments still
/// reads them (kept open for running queries) and answers for its
/// snapshot, instead of failing on a deleted file; a new snapshot no
/// longer holds the dropped time.
#[test]
fn a_snapshot_taken_before_retention_still_reads_what_it_dropped(
) -> Result<(), Box<dyn std::error::Error>> {
    let base = small_config();
    snapshot_before_retention(base.index_cache_bytes)?;
    // With a tiny index budget the dropped segments' directory entries
    // are paged out: the old snapshot pages them in from the index files
    // retention keeps open for the same grace as the data.
    snapshot_before_retention(1)
}

fn snapshot_before_retention(index_cache_bytes: usize) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let base = small_config();
    let cfg = Config {
        retention_bytes: Some(6 * base.segment_size),
        index_cache_bytes,
        ..base
    };
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    let h = w.declare(SourceId(1), schema("read"))?;
    let push = |w: &mut loom::Writer, from: u64, to: u64| -> loom::Result<()> {
        for i in from..to {
            w.push(h, i, &record(value(i), 8))?;
            if i % 500 == 0 {
                w.persist()?;
            }
        }
        w.persist()
    };
    // Enough for complete segments whose directory entries a tiny index
    // budget pages out before the snapshot is taken.
    push(&mut w, 0, 60_000)?;
    let old = r.snapshot();
    let (first, last) = old.time_span(SourceId(1)).ok_or("a time span")?;
    let dropped = w.stats().segments_dropped;
    let mut next = 60_000;
    while w.stats().segments_dropped < dropped + 6 {
        push(&mut w, next, next + 1_000)?;
        next += 1_000;
    }
    let mut times = Vec::new();
    old.scan(SourceId(1), first, last, |t, _| times.push(t))?;
    assert_eq!(times, (first..=last).collect::<Vec<_>>());
    let c = old.count_matching(SourceId(1), first, last, 0, u64::MAX, IndexMode::NoIndex)?;
    assert_eq!(c.count, last - first + 1);
    let (now_first, _) = r.snapshot().time_span(SourceId(1)).ok_or("a time span")?;
    assert!(now_first > first, "retention dropped nothing of {first}..");
    if index_cache_bytes < 1024 {
        let m = old.index_memory();
        assert!(m.directory_page_loads > 0, "nothing was paged in: {m:?}");
    }
    w.close()?;
    Ok(())
}
