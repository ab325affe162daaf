//! Percentiles of range indexes with narrow bins (`interval` ≤ 16), whose
//! summaries keep per-value counts so a rank's bin is read from them
//! rather than by decoding chunks, and of wide ones, which decode: over
//! random windows and aligned (`GROUP BY time`-like) buckets, p50, p99,
//! p99.99 and p100 equal sorting the records, before and after a reopen
//! (summaries then come from the segment index files). And the narrow
//! path is taken: a p99 per aligned bucket decodes no chunk, where the
//! same records under wide bins decode some.

mod common;

use common::{record, small_config, Model};
use loom::{Config, Reader, SourceId, SourceSchema};
use proptest::prelude::*;

/// The aligned period (µs), as `GROUP BY time(…)` buckets.
const PERIOD: u64 = 1_000;
const QS: [f64; 4] = [0.5, 0.99, 0.9999, 1.0];

fn schema(op: &str, min: u64, interval: u64, n_bins: u32) -> SourceSchema {
    common::indexed_schema("fine", ("op", op), (min, interval, n_bins))
}

fn config() -> Config {
    Config {
        align_chunks_us: PERIOD,
        // No sealed chunk spans a bucket boundary (see `aligned_chunks`).
        align_min_bytes: 0,
        ..small_config()
    }
}

#[derive(Debug, Clone)]
struct Case {
    /// (series, time step, value) per push.
    pushes: Vec<(usize, u64, u64)>,
    /// The bin layout: (min, interval, n_bins).
    bins: (u64, u64, u32),
    persist_every: usize,
    /// Random windows (fractions of the span, in thousandths).
    windows: Vec<(u64, u64)>,
}

/// Latency-like values: most in a body, some in a long tail, a few
/// repeated many times (so some per-value counts overflow their slots).
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0..400u64,
        2 => 400..3_000u64,
        1 => Just(250u64),
        1 => 0..20_000u64,
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let push = (0..2usize, 0..6u64, value());
    let bins = prop_oneof![
        // Narrow: per-value counts kept.
        (0..50u64, 1..=16u64, 50..2_000u32),
        // Wide: none.
        (0..50u64, 17..400u64, 5..200u32),
    ];
    (
        prop::collection::vec(push, 1..3_000),
        bins,
        50..900usize,
        prop::collection::vec((0..1000u64, 0..1000u64), 1..6),
    )
        .prop_map(|(pushes, bins, persist_every, windows)| Case {
            pushes,
            bins,
            persist_every,
            windows,
        })
}

fn fill(w: &mut loom::Writer, c: &Case, ids: &[SourceId]) -> Result<Model, loom::Error> {
    let (min, interval, n_bins) = c.bins;
    let handles = [
        w.declare(ids[0], schema("read", min, interval, n_bins))?,
        w.declare(ids[1], schema("write", min, interval, n_bins))?,
    ];
    let mut model = Model::default();
    let mut ts = [0u64; 2];
    for (n, &(s, dt, v)) in c.pushes.iter().enumerate() {
        ts[s] += dt;
        let rec = record(v, (v % 7) as usize);
        w.push(handles[s], ts[s], &rec)?;
        model.records.push((ids[s], ts[s], rec));
        if n % c.persist_every == c.persist_every - 1 {
            w.persist()?;
        }
    }
    w.sync();
    w.wait_for_index()?;
    Ok(model)
}

fn check(r: &Reader, model: &Model, c: &Case, ids: &[SourceId]) -> Result<(), TestCaseError> {
    let end = model.max_ts();
    let mut windows: Vec<(u64, u64)> = (0..=end / PERIOD)
        .map(|k| (k * PERIOD, (k + 1) * PERIOD - 1))
        .collect();
    windows.extend(c.windows.iter().map(|&(a, b)| {
        let (a, b) = (a.min(b), a.max(b));
        (end * a / 1000, end * b / 1000 + 1)
    }));
    windows.push((0, u64::MAX));
    for &id in ids {
        for &(t0, t1) in &windows {
            for q in QS {
                prop_assert_eq!(
                    r.percentile(id, t0, t1, q)?,
                    model.percentile(id, t0, t1, q),
                    "{:?} {}..{} q {} bins {:?}",
                    id,
                    t0,
                    t1,
                    q,
                    c.bins
                );
            }
        }
    }
    // Both series together, as a measurement's tag sets are.
    let snap = r.snapshot();
    for &(t0, t1) in &windows {
        let mut all: Vec<u64> = ids
            .iter()
            .flat_map(|&id| {
                model
                    .window(id, t0, t1)
                    .map(|(_, _, b)| common::value_of(b))
            })
            .collect();
        all.sort_unstable();
        let w = snap.window_many(ids, t0, t1, loom::Extremes::NONE)?;
        for q in QS {
            let want = (!all.is_empty())
                .then(|| all[(loom::nearest_rank(q, all.len() as u64) - 1) as usize]);
            prop_assert_eq!(w.percentile(q)?, want, "both {}..{} q {}", t0, t1, q);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn percentiles_answer_as_sorting(c in case()) {
        let dir = tempfile::tempdir()?;
        let ids = [SourceId(1), SourceId(2)];
        let model = {
            let (mut w, r) = loom::open(dir.path(), config())?;
            let model = fill(&mut w, &c, &ids)?;
            check(&r, &model, &c, &ids)?;
            w.close()?;
            model
        };
        let r = loom::open_read_only(dir.path())?;
        check(&r, &model, &c, &ids)?;
        let (mut w, r) = loom::open(dir.path(), config())?;
        w.wait_for_index()?;
        check(&r, &model, &c, &ids)?;
    }
}

/// Chunks decoded to answer p99 of every aligned bucket, and the answers
/// checked against sorting.
fn decoded_for_buckets(
    r: &Reader,
    model: &Model,
    id: SourceId,
) -> Result<u64, Box<dyn std::error::Error>> {
    let before = loom::rank_chunks_decoded();
    for k in 0..=model.max_ts() / PERIOD {
        let (t0, t1) = (k * PERIOD, (k + 1) * PERIOD - 1);
        assert_eq!(
            r.percentile(id, t0, t1, 0.99)?,
            model.percentile(id, t0, t1, 0.99),
            "{t0}..{t1}"
        );
    }
    Ok(loom::rank_chunks_decoded() - before)
}

/// The same records under narrow and wide bins: narrow, p99 per aligned
/// bucket decodes no chunk (every chunk lies inside its bucket, and no
/// value repeats often enough in a chunk to overflow its count), also
/// after a reopen; wide, it decodes chunks (the check can fail).
#[test]
fn narrow_bins_answer_from_summaries() -> Result<(), Box<dyn std::error::Error>> {
    let mut decoded = Vec::new();
    for interval in [10u64, 100] {
        let dir = tempfile::tempdir()?;
        let id = SourceId(7);
        let mut model = Model::default();
        {
            let (mut w, r) = loom::open(dir.path(), config())?;
            let h = w.declare(id, schema("read", 0, interval, 100_000 / interval as u32))?;
            for i in 0..20_000u64 {
                // Spread values: a body and a tail, every value rare.
                let v = common::mix(i) % 5_000;
                let rec = record(v, 3);
                w.push(h, i / 4, &rec)?;
                model.records.push((id, i / 4, rec));
            }
            w.persist()?;
            w.sync();
            w.wait_for_index()?;
            let n = decoded_for_buckets(&r, &model, id)?;
            w.close()?;
            decoded.push(n);
        }
        let r = loom::open_read_only(dir.path())?;
        decoded.push(decoded_for_buckets(&r, &model, id)?);
    }
    // The last bucket's records may sit in an open chunk (the tail, read
    // without counting): every sealed chunk is answered from summaries.
    assert_eq!(&decoded[..2], &[0, 0], "narrow bins decoded chunks");
    assert!(decoded[2] > 0 && decoded[3] > 0, "{decoded:?}");
    Ok(())
}
