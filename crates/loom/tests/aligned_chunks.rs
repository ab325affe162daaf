//! Chunks cut at whole multiples of `Config::align_chunks_us`: with no
//! minimum size, no sealed chunk spans a multiple (each aligned period's
//! scan reads only its own chunks, so the periods' chunk reads add up to
//! the store's chunks; without alignment they do not); with any minimum,
//! across persists and a reopen, every aligned bucket's and random
//! window's count, aggregate and percentiles equal brute force over the
//! same records, for a busy and a slow series.

mod common;

use common::{record, small_config, spec, value_of, Model};
use loom::{Config, Reader, SourceId};
use proptest::prelude::*;

/// The aligned period of the tests (µs of the records' timestamps).
const PERIOD: u64 = 1_000;

#[derive(Debug, Clone)]
struct Case {
    /// (series 0 busy / 1 slow, time step, value) per push.
    pushes: Vec<(usize, u64, u64)>,
    min_bytes: usize,
    persist_every: usize,
    wait_index: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let push = (0..2usize, 0..40u64, 0..1200u64);
    (
        prop::collection::vec(push, 1..3000),
        prop_oneof![Just(0usize), 0..600usize],
        50..800usize,
        any::<bool>(),
    )
        .prop_map(|(pushes, min_bytes, persist_every, wait_index)| Case {
            // The slow series steps 20x as far.
            pushes: pushes
                .into_iter()
                .map(|(s, dt, v)| (s, if s == 1 { dt * 20 } else { dt }, v))
                .collect(),
            min_bytes,
            persist_every,
            wait_index,
        })
}

fn config(min_bytes: usize) -> Config {
    Config {
        align_chunks_us: PERIOD,
        align_min_bytes: min_bytes,
        ..small_config()
    }
}

/// Pushes the case's records (each series' times increasing) and returns
/// the model of them.
fn fill(w: &mut loom::Writer, c: &Case, ids: &[SourceId]) -> Result<Model, loom::Error> {
    let handles = ids
        .iter()
        .map(|&id| w.declare_source(id, Some(spec())))
        .collect::<Result<Vec<_>, _>>()?;
    let mut model = Model::default();
    let mut ts = [0u64; 2];
    for (n, &(s, dt, value)) in c.pushes.iter().enumerate() {
        ts[s] += dt;
        let rec = record(value, (value % 5) as usize);
        w.push(handles[s], ts[s], &rec)?;
        model.records.push((ids[s], ts[s], rec));
        if n % c.persist_every == c.persist_every - 1 {
            w.persist()?;
        }
    }
    w.sync();
    if c.wait_index {
        w.wait_for_index()?;
    }
    Ok(model)
}

/// Every aligned bucket and a few other windows answer as brute force.
fn check(r: &Reader, model: &Model, ids: &[SourceId]) -> Result<(), TestCaseError> {
    let end = model.max_ts();
    let mut windows: Vec<(u64, u64)> = (0..=end / PERIOD)
        .map(|k| (k * PERIOD, (k + 1) * PERIOD - 1))
        .collect();
    windows.extend([(0, end), (end / 3, end / 2 + 7), (PERIOD / 2, end + 5)]);
    for &id in ids {
        for &(t0, t1) in &windows {
            let want = model.aggregate(id, t0, t1);
            prop_assert_eq!(r.aggregate(id, t0, t1)?, want, "{:?} {}..{}", id, t0, t1);
            prop_assert_eq!(r.count(id, t0, t1)?, want.count);
            for q in [0.5, 0.99, 1.0] {
                prop_assert_eq!(
                    r.percentile(id, t0, t1, q)?,
                    model.percentile(id, t0, t1, q),
                    "{:?} {}..{} q {}",
                    id,
                    t0,
                    t1,
                    q
                );
            }
        }
    }
    let (t0, t1) = (end / 4, end / 2);
    let mut all: Vec<u64> = ids
        .iter()
        .flat_map(|&id| model.window(id, t0, t1).map(|(_, _, b)| value_of(b)))
        .collect();
    all.sort_unstable();
    let snap = r.snapshot();
    let w = snap.window_many(ids, t0, t1, loom::Extremes::BOTH)?;
    prop_assert_eq!(w.count(), all.len() as u64);
    let p99 = w.percentile(0.99)?;
    let want =
        (!all.is_empty()).then(|| all[(loom::nearest_rank(0.99, all.len() as u64) - 1) as usize]);
    prop_assert_eq!(p99, want);
    Ok(())
}

/// Chunks the scans of every aligned period read, added up.
fn period_chunk_reads(r: &Reader, id: SourceId, end: u64) -> Result<u64, loom::Error> {
    let snap = r.snapshot();
    let mut n = 0;
    for k in 0..=end / PERIOD {
        n += snap
            .scan(id, k * PERIOD, (k + 1) * PERIOD - 1, |_, _| {})?
            .chunks_read;
    }
    Ok(n)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn aligned_chunks_answer_as_brute_force(c in case()) {
        let dir = tempfile::tempdir()?;
        let ids = [SourceId(1), SourceId(2)];
        let model = {
            let (mut w, r) = loom::open(dir.path(), config(c.min_bytes))?;
            let model = fill(&mut w, &c, &ids)?;
            check(&r, &model, &ids)?;
            if c.min_bytes == 0 {
                // No sealed chunk spans a period boundary: each is read
                // by exactly one period's scan.
                let end = model.max_ts();
                for &id in &ids {
                    let chunks = r.snapshot().storage_use(id).map_or(0, |u| u.chunks);
                    prop_assert_eq!(period_chunk_reads(&r, id, end)?, chunks, "{:?}", id);
                }
            }
            w.close()?;
            model
        };
        // A Rust extractor is not stored: declared again after the reopen.
        let (mut w, r) = loom::open(dir.path(), config(c.min_bytes))?;
        for &id in &ids {
            w.declare_source(id, Some(spec()))?;
        }
        w.sync();
        w.wait_for_index()?;
        check(&r, &model, &ids)?;
    }
}

/// The check above can fail: unaligned, a busy series' chunks span
/// period boundaries, so the periods' scans read some chunks twice.
#[test]
fn unaligned_chunks_span_periods() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cfg = Config {
        align_chunks_us: 0,
        ..small_config()
    };
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    let h = w.declare_source(SourceId(1), Some(spec()))?;
    for i in 0..5_000u64 {
        w.push(h, i * 7, &record(i % 900, 3))?;
    }
    w.sync();
    let chunks = r
        .snapshot()
        .storage_use(SourceId(1))
        .map_or(0, |u| u.chunks);
    assert!(chunks > 10);
    assert!(period_chunk_reads(&r, SourceId(1), 5_000 * 7)? > chunks);
    Ok(())
}
