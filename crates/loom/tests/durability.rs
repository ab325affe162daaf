//! A store you can come back to: schemas and summaries persist, one writer
//! at a time, read-only opens beside it, retention, and a full disk.

mod common;

use std::path::Path;
use std::process::Command;

use common::{record, small_config, Model};
use loom::{
    Config, Error, FieldDef, FieldType, IndexDef, IndexMode, Reader, SourceId, SourceSchema,
};

fn schema(op: &str) -> SourceSchema {
    SourceSchema {
        measurement: "test".into(),
        tags: vec![("op".into(), op.into())],
        fields: vec![FieldDef {
            name: "value".into(),
            offset: 0,
            ty: FieldType::U64,
        }],
        index: Some(IndexDef {
            field: "value".into(),
            min: 100,
            interval: 50,
            n_bins: 20,
        }),
    }
}

/// Heavy-tailed values, several records per µs.
fn value(i: u64) -> u64 {
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    if h.is_multiple_of(97) {
        3000 + h % 5000
    } else {
        h % 1400
    }
}

fn fill(
    dir: &Path,
    cfg: Config,
    from: u64,
    n: u64,
    model: &mut Model,
) -> Result<loom::Writer, Box<dyn std::error::Error>> {
    let (mut w, _r) = loom::open(dir, cfg)?;
    let hs = [
        w.declare(SourceId(1), schema("read"))?,
        w.declare(SourceId(2), schema("write"))?,
    ];
    for i in from..from + n {
        let s = (i % 3 == 0) as usize;
        let b = record(value(i), (i % 9) as usize);
        w.push(hs[s], i / 2, &b)?;
        model.records.push((SourceId(1 + s as u64), i / 2, b));
    }
    Ok(w)
}

/// Every question the engine answers, over windows on disk, in memory,
/// across both and beyond, compared with brute force.
fn check_answers(r: &Reader, model: &Model) -> Result<(), Box<dyn std::error::Error>> {
    let end = model.max_ts();
    let windows = [
        (0, end),
        (end / 7, end / 3),
        (end / 2, end + 10),
        (end + 5, end + 9),
    ];
    for id in [SourceId(1), SourceId(2)] {
        for &(t0, t1) in &windows {
            assert_eq!(r.aggregate(id, t0, t1)?, model.aggregate(id, t0, t1));
            assert_eq!(
                r.count(id, t0, t1)?,
                model.window(id, t0, t1).count() as u64
            );
            for q in [0.5, 0.99, 0.9999] {
                assert_eq!(
                    r.percentile(id, t0, t1, q)?,
                    model.percentile(id, t0, t1, q)
                );
            }
            let mut got = Vec::new();
            r.range_scan(id, t0, t1, 700, 4000, |t, v, b| {
                got.push((t, v, b.to_vec()))
            })?;
            assert_eq!(got, model.range(id, t0, t1, 700, 4000));
            let want = model.range(id, t0, t1, 1000, u64::MAX).len() as u64;
            for mode in [
                IndexMode::NoIndex,
                IndexMode::TimeOnly,
                IndexMode::RangeOnly,
                IndexMode::TimeRange,
            ] {
                assert_eq!(
                    r.count_matching(id, t0, t1, 1000, u64::MAX, mode)?.count,
                    want
                );
            }
        }
    }
    Ok(())
}

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
