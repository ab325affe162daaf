//! A reader thread queries while the writer ingests: every answer equals
//! brute force over some synced prefix of the pushed records, also while
//! the writer pages out the directory entries of older segments under it.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{record, small_config, spec, Model};
use loom::{IndexMode, SourceId};

#[test]
fn reader_answers_match_a_synced_prefix() -> Result<(), Box<dyn std::error::Error>> {
    answers_match_a_synced_prefix(small_config()).map(|_| ())
}

#[test]
fn reader_answers_match_a_synced_prefix_while_the_directory_is_paged_out(
) -> Result<(), Box<dyn std::error::Error>> {
    // A budget so small that the entries of every complete segment are
    // paged out (its eighth: about a dozen entries) and read back.
    let cfg = loom::Config {
        index_cache_bytes: 4096,
        ..small_config()
    };
    let (loads, held) = answers_match_a_synced_prefix(cfg)?;
    assert!(loads > 0, "the reader read entries back");
    assert!(held < 64 << 10, "{held} bytes of directory held");
    Ok(())
}

/// Returns the directory pages the reader read and the directory bytes
/// held at the end.
fn answers_match_a_synced_prefix(
    cfg: loom::Config,
) -> Result<(u64, usize), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    let ids = [SourceId(1), SourceId(2)];
    let hs = [
        w.declare_source(ids[0], Some(spec()))?,
        w.declare_source(ids[1], Some(spec()))?,
    ];
    let done = Arc::new(AtomicBool::new(false));
    // Per-source prefix lengths at each sync, in push order of `model`.
    let reader = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut answers = Vec::new();
            while !done.load(Ordering::Acquire) {
                let snap = r.snapshot();
                let n = snap.record_count(ids[0]);
                let agg = snap.aggregate(ids[0], 0, u64::MAX);
                let p = snap.percentile(ids[0], 200, u64::MAX, 0.99);
                let c = snap.count_matching(ids[0], 0, u64::MAX, 500, 900, IndexMode::TimeRange);
                answers.push((
                    n,
                    agg.map_err(|e| e.to_string()),
                    p.map_err(|e| e.to_string()),
                    c.map(|c| c.count).map_err(|e| e.to_string()),
                ));
            }
            answers
        })
    };
    let mut model = Model::default();
    let mut x: u64 = 12345;
    for i in 0..300_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let s = (x >> 60) as usize % 2;
        let v = (x >> 20) % 1200;
        let b = record(v, (x >> 40) as usize % 12);
        w.push(hs[s], i, &b)?;
        model.records.push((ids[s], i, b));
        if i % 1000 == 0 {
            w.sync();
        }
    }
    w.sync();
    std::thread::sleep(std::time::Duration::from_millis(50));
    done.store(true, Ordering::Release);
    let answers = reader.join().map_err(|_| "reader panicked")?;
    assert!(answers.len() > 10, "only {} answers", answers.len());
    // Index of the k-th record of source 0 in push order, for prefix lookup.
    let src0: Vec<usize> = model
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.0 == ids[0])
        .map(|(i, _)| i)
        .collect();
    let mut checked = 0;
    for (n, agg, p, c) in answers.iter().step_by((answers.len() / 200).max(1)) {
        let prefix = Model {
            records: model.records[..src0
                .get(*n as usize)
                .copied()
                .unwrap_or(model.records.len())]
                .to_vec(),
        };
        assert_eq!(
            agg.as_ref().ok(),
            Some(&prefix.aggregate(ids[0], 0, u64::MAX)),
            "after {n} records"
        );
        assert_eq!(
            p.as_ref().ok(),
            Some(&prefix.percentile(ids[0], 200, u64::MAX, 0.99))
        );
        assert_eq!(
            c.as_ref().ok(),
            Some(&(prefix.range(ids[0], 0, u64::MAX, 500, 900).len() as u64))
        );
        checked += 1;
    }
    assert!(checked > 10);
    let m = w.reader().snapshot().index_memory();
    w.close()?;
    Ok((m.directory_page_loads, m.directory_bytes))
}
