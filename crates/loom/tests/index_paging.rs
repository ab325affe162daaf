//! Index memory bounded by configuration, not by the store's size: with an
//! index-cache budget far below its summaries, a store written by schema
//! answers every question exactly (brute force) through a crash, a reopen
//! (older summaries left in their segment index files), more writes (the
//! indexer pages out what completes) and retention, while the summaries it
//! holds stay within the budget.

mod common;

use common::schema_store::{check_answers, fill, value};
use common::{record, small_config, Model};
use loom::{Config, SourceId};

/// Index-cache budget of the paging test: far below the summaries of the
/// store it writes (thousands of chunks, each with at least one summary).
const TINY_INDEX_BUDGET: usize = 64 << 10;

/// Summaries a paged store may hold in memory for `sources` sources: the
/// budget's half for recent data, plus the summaries of the segment being
/// written (only complete segments are paged out; a small-config segment
/// holds a few dozen chunks: about 54 KB of summaries for both sources).
fn paged_bound(sources: usize) -> usize {
    TINY_INDEX_BUDGET / 2 + sources * (32 << 10)
}

/// A small-layout store of 300 000 records of two sources written with
/// the tiny budget, persisted and indexed: its config, writer and model.
fn paged_store(
    dir: &std::path::Path,
) -> Result<(Config, loom::Writer, Model), Box<dyn std::error::Error>> {
    let cfg = Config {
        index_cache_bytes: TINY_INDEX_BUDGET,
        ..small_config()
    };
    let mut model = Model::default();
    let mut w = fill(dir, cfg.clone(), 0, 300_000, &mut model)?;
    w.persist()?;
    w.wait_for_index()?;
    Ok((cfg, w, model))
}

#[test]
fn paged_summaries_answer_exactly_through_a_crash_reopen_and_retention(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (cfg, mut w, model) = paged_store(dir.path())?;
    let persisted = model.clone();
    let h = w.handle_of(SourceId(1)).ok_or("source 1 has a handle")?;
    w.push(h, 1_000_000, &record(5, 0))?;
    w.simulate_crash();
    // A read-only open with the default budget holds every summary: the
    // store's summaries are several times what the paged writer may hold.
    let all = loom::open_read_only(dir.path())?
        .snapshot()
        .index_memory()
        .summaries_bytes;
    eprintln!(
        "summaries of the store: {all} bytes; paged bound {}",
        paged_bound(2)
    );
    assert!(
        all > 3 * paged_bound(2),
        "{all} bytes of summaries: too few to exceed the bound {} several times",
        paged_bound(2)
    );

    let (mut w, r) = loom::open(dir.path(), cfg.clone())?;
    let n = r.snapshot().record_count(SourceId(1)) + r.snapshot().record_count(SourceId(2));
    assert!(n == 300_000 || n == 300_001, "{n} records recovered");
    let mut model = persisted;
    if n == 300_001 {
        model.records.push((SourceId(1), 1_000_000, record(5, 0)));
    }
    assert_eq!(
        w.stats().chunks_reindexed,
        0,
        "summaries on disk are paged, not rebuilt"
    );
    w.wait_for_index()?;
    check_answers(&r, &model)?;
    let m = r.snapshot().index_memory();
    assert!(m.summaries_bytes <= paged_bound(2), "{m:?}");
    assert!(m.cache_bytes <= TINY_INDEX_BUDGET + (128 << 10), "{m:?}");
    assert!(
        m.summaries_bytes + m.cache_bytes <= TINY_INDEX_BUDGET + 2 * (64 << 10),
        "the budget, plus the segment being written and one read back: {m:?}"
    );
    assert!(m.page_loads > 0, "queries read summaries back: {m:?}");

    // More records: the writer pages out what completes as it goes.
    let mut model_more = model.clone();
    let hs = [
        w.handle_of(SourceId(1)).ok_or("handle 1")?,
        w.handle_of(SourceId(2)).ok_or("handle 2")?,
    ];
    for i in 0..200_000u64 {
        let s = (i % 3 == 0) as usize;
        let b = record(value(i), (i % 9) as usize);
        let t = 2_000_000 + i / 2;
        w.push(hs[s], t, &b)?;
        model_more.records.push((SourceId(1 + s as u64), t, b));
    }
    w.persist()?;
    w.wait_for_index()?;
    check_answers(&r, &model_more)?;
    let m = r.snapshot().index_memory();
    assert!(m.summaries_bytes <= paged_bound(2), "{m:?}");
    w.close()?;

    // Retention drops the oldest segments, paged summaries with them:
    // what is kept (a suffix of each source's records) is answered exactly.
    let retained = Config {
        retention_bytes: Some(10 * small_config().segment_size),
        ..cfg
    };
    let (mut w, r) = loom::open(dir.path(), retained)?;
    let h = w.handle_of(SourceId(2)).ok_or("handle 2")?;
    w.push(h, 3_000_000, &record(7, 0))?;
    w.persist()?;
    w.wait_for_index()?;
    model_more
        .records
        .push((SourceId(2), 3_000_000, record(7, 0)));
    let snap = r.snapshot();
    check_retained_suffix(&snap, &model_more)?;
    let m = snap.index_memory();
    assert!(m.summaries_bytes <= paged_bound(2), "{m:?}");
    w.close()?;
    Ok(())
}

/// What retention kept of each source (a suffix of its records) is
/// answered exactly.
fn check_retained_suffix(
    snap: &loom::Snapshot,
    model: &Model,
) -> Result<(), Box<dyn std::error::Error>> {
    for id in [SourceId(1), SourceId(2)] {
        let kept = snap.retained_count(id) as usize;
        let mine: Vec<_> = model
            .records
            .iter()
            .filter(|x| x.0 == id)
            .cloned()
            .collect();
        assert!(kept < mine.len(), "retention dropped records of {id:?}");
        let suffix = Model {
            records: mine[mine.len() - kept..].to_vec(),
        };
        assert_eq!(
            snap.aggregate(id, 0, u64::MAX)?,
            suffix.aggregate(id, 0, u64::MAX)
        );
        for q in [0.5, 0.99, 0.9999] {
            assert_eq!(
                snap.percentile(id, 0, u64::MAX, q)?,
                suffix.percentile(id, 0, u64::MAX, q)
            );
        }
    }
    Ok(())
}

/// Directory (time-index) memory a paged store may hold: an eighth of the
/// budget for recent entries, a run per source and older segment, and the
/// entries of the few segments whose index file is not complete yet (a
/// small-config segment holds about 64 chunks of 40 bytes).
fn directory_bound(sources: usize, segments: usize) -> usize {
    TINY_INDEX_BUDGET / 8 + sources * segments * 128 + 4 * 64 * 40
}

/// Point lookups by record number, every `step`-th record of each source.
fn check_lookups(
    r: &loom::Reader,
    model: &Model,
    step: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    for id in [SourceId(1), SourceId(2)] {
        let mine: Vec<_> = model.records.iter().filter(|x| x.0 == id).collect();
        for (seq, (_, t, b)) in mine.iter().enumerate().step_by(step) {
            let got = r.get(loom::RecordAddress {
                source: id,
                seq: seq as u64,
            })?;
            assert_eq!(got, Some((*t, b.clone())), "record {seq} of {id:?}");
        }
        let past = r.get(loom::RecordAddress {
            source: id,
            seq: mine.len() as u64,
        })?;
        assert_eq!(past, None);
    }
    Ok(())
}

fn segments_of(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .count()
    })
}

#[test]
fn paged_directory_answers_exactly_within_budget_and_reopens_without_paging_in(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (cfg, w, model) = paged_store(dir.path())?;
    let segments = segments_of(dir.path());
    // Everything in memory (default budget): what the paged store must
    // answer the same as, and how large its directory is.
    let full = loom::open_read_only(dir.path())?;
    let all = full.snapshot().index_memory();
    assert_eq!(all.directory_page_loads, 0, "{all:?}");
    eprintln!(
        "{segments} segments; directory of the store {} bytes; paged bound {}",
        all.directory_bytes,
        directory_bound(2, segments)
    );
    assert!(
        all.directory_bytes > 3 * directory_bound(2, segments),
        "{} bytes of directory: too few to exceed the bound {} several times",
        all.directory_bytes,
        directory_bound(2, segments)
    );

    // The writer paged out what completed as it wrote.
    let r = w.reader();
    let m = r.snapshot().index_memory();
    assert!(m.directory_bytes <= directory_bound(2, segments), "{m:?}");
    check_answers(&r, &model)?;
    check_lookups(&r, &model, 97)?;
    let m = r.snapshot().index_memory();
    assert!(
        m.directory_page_loads > 0,
        "queries read entries back: {m:?}"
    );
    assert!(m.directory_bytes <= directory_bound(2, segments), "{m:?}");
    assert!(
        m.cache_bytes + m.directory_cache_bytes <= TINY_INDEX_BUDGET + (64 << 10),
        "paged-in summaries and entries share the budget (plus the page being read): {m:?}"
    );
    w.close()?;

    // The store as closed, every entry in memory: what the paged reopen
    // must answer the same as.
    let full = loom::open_read_only(dir.path())?;
    // A reopen pages nothing in until asked, not even for the questions
    // answered from the runs alone.
    let (w, r) = loom::open(dir.path(), cfg.clone())?;
    let snap = r.snapshot();
    let fsnap = full.snapshot();
    for id in [SourceId(1), SourceId(2)] {
        assert_eq!(snap.time_span(id), fsnap.time_span(id));
        assert_eq!(snap.retained_count(id), fsnap.retained_count(id));
        assert_eq!(snap.record_count(id), fsnap.record_count(id));
        assert_eq!(
            snap.count_log(id, 0, u64::MAX),
            fsnap.count_log(id, 0, u64::MAX)
        );
    }
    let m = snap.index_memory();
    assert_eq!(m.directory_page_loads, 0, "{m:?}");
    assert_eq!(m.page_loads, 0, "{m:?}");
    assert!(m.directory_bytes <= directory_bound(2, segments), "{m:?}");
    assert!(
        m.directory_bytes * 3 < all.directory_bytes,
        "the reopen left older entries in their files: {m:?}"
    );

    // Then every question pages in what it needs and answers exactly.
    check_answers(&r, &model)?;
    check_lookups(&r, &model, 89)?;
    let snap = r.snapshot();
    for id in [SourceId(1), SourceId(2)] {
        assert_eq!(snap.storage_use(id), fsnap.storage_use(id));
        let end = snap.log_end();
        for cut in [end / 5, end / 2] {
            assert_eq!(snap.count_log(id, cut, end), fsnap.count_log(id, cut, end));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            snap.scan_log(id, cut, end, |t, x| a.push((t, x.to_vec())))?;
            fsnap.scan_log(id, cut, end, |t, x| b.push((t, x.to_vec())))?;
            assert_eq!(a, b);
        }
    }
    let m = snap.index_memory();
    assert!(m.directory_page_loads > 0, "{m:?}");
    assert!(m.directory_bytes <= directory_bound(2, segments), "{m:?}");
    assert!(
        m.held_bytes()
            <= TINY_INDEX_BUDGET + directory_bound(2, segments) + paged_bound(2) + (64 << 10),
        "index memory within the budget plus the recent parts: {m:?}"
    );
    w.close()?;
    Ok(())
}
