//! Open chunks across `persist`, crashes and reopens: `persist` leaves a
//! young open chunk open and journals its records; a crash after persist
//! loses none of them (read back by a writer and by a read-only open);
//! a torn journal entry costs only the records it held; chunks are sealed
//! by data age, so a slow series gets one chunk per `seal_after_us`, not
//! one per persist; a clean close leaves no journal. Every answer is
//! compared with brute force.

mod common;

use common::{record, small_config, Model};
use loom::{Config, Reader, SourceId, SourceSchema};

/// A declared schema (persisted, so reopens and read-only opens know the
/// index): the value is the record's first 8 bytes, as `common::value_of`.
fn schema(n: u64) -> SourceSchema {
    common::indexed_schema("test", ("n", &n.to_string()), (100, 50, 20))
}

fn journal_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("open-chunks-"))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn check(r: &Reader, model: &Model, ids: &[SourceId]) -> Result<(), Box<dyn std::error::Error>> {
    let end = model.max_ts();
    for &id in ids {
        for (t0, t1) in [(0, end), (end / 3, end / 2), (end / 2, end + 5)] {
            assert_eq!(
                r.aggregate(id, t0, t1)?,
                model.aggregate(id, t0, t1),
                "{id:?}"
            );
            for q in [0.0, 0.5, 0.9999, 1.0] {
                assert_eq!(
                    r.percentile(id, t0, t1, q)?,
                    model.percentile(id, t0, t1, q),
                    "{id:?} p{q}"
                );
            }
        }
    }
    Ok(())
}

fn config() -> Config {
    Config {
        // 1 000 µs of data time: small enough for a test.
        seal_after_us: Some(1_000),
        ..small_config()
    }
}

#[test]
fn persisted_open_chunks_survive_a_crash_and_torn_entries_cost_only_themselves(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ids = [SourceId(1), SourceId(2), SourceId(3)];
    let mut model = Model::default();
    let (mut w, _r) = loom::open(dir.path(), config())?;
    let hs: Vec<_> = ids
        .iter()
        .map(|&id| w.declare(id, schema(id.0)))
        .collect::<Result<_, _>>()?;
    // Source 1 is busy (fills chunks), 2 slow, 3 gets one record per round.
    let mut ts = 0u64;
    for round in 0..40u64 {
        for k in 0..30u64 {
            ts += 1;
            let b = record(100 + (round * 31 + k * 7) % 1500, (k % 5) as usize);
            w.push(hs[0], ts, &b)?;
            model.records.push((ids[0], ts, b));
            if k % 10 == 0 {
                let b = record(50 + k * round, 0);
                w.push(hs[1], ts, &b)?;
                model.records.push((ids[1], ts, b));
            }
        }
        let b = record(round * 40, 3);
        w.push(hs[2], ts, &b)?;
        model.records.push((ids[2], ts, b));
        w.persist()?;
    }
    // Source 3 has 40 records over 1 200 µs: sealed by age about once,
    // not once per persist (40 times).
    let chunks3 = w
        .reader()
        .snapshot()
        .index_held(ids[2])
        .map_or(0, |h| h.chunks);
    assert!((1..=2).contains(&chunks3), "source 3 has {chunks3} chunks");
    assert!(
        !journal_files(dir.path()).is_empty(),
        "persist journals open chunks"
    );
    // Records pushed after the last persist may be lost by a crash; these
    // are not in the model.
    w.push(hs[0], ts + 1, &record(7, 0))?;
    w.simulate_crash();

    // A read-only open sees the journaled records.
    check(&loom::open_read_only(dir.path())?, &model, &ids)?;
    let (mut w, r) = loom::open(dir.path(), config())?;
    check(&r, &model, &ids)?;
    // The reopened writer goes on: the open chunks continue where they were.
    let hs: Vec<_> = ids
        .iter()
        .map(|&id| w.handle_of(id))
        .collect::<Option<_>>()
        .ok_or("handle")?;
    for (i, &h) in hs.iter().enumerate() {
        ts += 1;
        let b = record(999 + i as u64, 1);
        w.push(h, ts, &b)?;
        model.records.push((ids[i], ts, b));
    }
    w.persist()?;
    w.simulate_crash();

    // Tear the last journal entry: only its records go.
    let files = journal_files(dir.path());
    let last = files.last().ok_or("no journal")?;
    let len = std::fs::metadata(last)?.len();
    let f = std::fs::OpenOptions::new().write(true).open(last)?;
    f.set_len(len - 3)?;
    drop(f);
    let (w, r) = loom::open(dir.path(), config())?;
    let got: u64 = ids
        .iter()
        .map(|&id| r.count(id, 0, u64::MAX).unwrap_or(0))
        .sum();
    let want = model.records.len() as u64;
    assert!(
        got < want && got >= want - 40,
        "{got} of {want} records after a torn entry"
    );
    // A clean close seals everything and removes the journal.
    w.close()?;
    assert!(journal_files(dir.path()).is_empty());
    let (w, r) = loom::open(dir.path(), config())?;
    assert_eq!(
        ids.iter()
            .map(|&id| r.count(id, 0, u64::MAX).unwrap_or(0))
            .sum::<u64>(),
        got
    );
    w.close()?;
    Ok(())
}

#[test]
fn without_seal_age_persist_seals_every_open_chunk() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cfg = Config {
        seal_after_us: None,
        ..small_config()
    };
    let (mut w, r) = loom::open(dir.path(), cfg.clone())?;
    let h = w.declare(SourceId(5), schema(5))?;
    let mut model = Model::default();
    for i in 0..10u64 {
        let b = record(200 + i, 0);
        w.push(h, i, &b)?;
        model.records.push((SourceId(5), i, b));
        w.persist()?;
    }
    assert_eq!(
        r.snapshot().index_held(SourceId(5)).map(|h| h.chunks),
        Some(10)
    );
    assert!(journal_files(dir.path()).is_empty());
    w.simulate_crash();
    let (w, r) = loom::open(dir.path(), cfg)?;
    check(&r, &model, &[SourceId(5)])?;
    w.close()?;
    Ok(())
}
