//! Percentile, count and aggregate over many series in one call
//! (`percentile_many`, `count_many`, `aggregate_many`, `aggregate_many_with`,
//! `max_many`, `min_many`, `window_many`) equal brute force
//! over the union of the series' records: 1 to 200 series (some empty,
//! some holding one record), values with many ties, windows in memory, on
//! disk, across both, empty and beyond the data, quantiles 0, 0.5, 0.9999,
//! 1 and random ones; series sharing one bin layout (merged bin counts) and
//! series with different layouts (the exact fallback); and again with the
//! indexes declared in schemas (summaries persisted) and an index-cache
//! budget so small that the summaries are paged out and read back from the
//! segment index files, before and after a reopen.

mod common;

use common::{record, small_config, value_of};
use loom::{
    Aggregate, Extremes, FieldDef, FieldType, IndexDef, RangeIndexSpec, Reader, SourceId,
    SourceSchema,
};
use proptest::prelude::*;

/// One pushed record: (series, timestamp, value).
type Rec = (usize, u64, u64);

fn spec(interval: u64) -> RangeIndexSpec {
    RangeIndexSpec {
        extractor: value_of,
        min: 100,
        interval,
        n_bins: 20,
    }
}

/// `spec(interval)` declared in a schema: the same bins over the same
/// value (the first 8 bytes), persisted, so its summaries can be paged.
fn schema(series: usize, interval: u64) -> SourceSchema {
    SourceSchema {
        measurement: "many".into(),
        tags: vec![("series".into(), series.to_string())],
        fields: vec![FieldDef {
            name: "v".into(),
            offset: 0,
            ty: FieldType::U64,
        }],
        index: Some(IndexDef {
            field: "v".into(),
            min: 100,
            interval,
            n_bins: 20,
        }),
    }
}

fn value_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        // Few distinct values: ties inside and across series.
        4 => prop::sample::select(vec![0u64, 7, 100, 150, 151, 600, 1000]),
        4 => 0u64..1200,
        1 => 1200u64..100_000,
        1 => Just(u64::MAX),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    series: usize,
    /// (series, timestamp step, value) in push order.
    pushes: Vec<(usize, u64, u64)>,
    /// Persist after this many pushes (seals every open chunk).
    persist_every: usize,
    /// Every series gets the same bin layout, or intervals that differ.
    mixed_layouts: bool,
    /// Wait for the indexer (else some chunks are scanned unsummarised).
    wait_index: bool,
    windows: Vec<(u64, u64)>,
    quantiles: Vec<f64>,
    /// Sets of series asked about together (indices into 0..series).
    picks: Vec<Vec<usize>>,
}

fn case() -> impl Strategy<Value = Case> {
    prop_oneof![3 => 1usize..12, 2 => 12usize..=200]
        .prop_flat_map(|series| {
            // Some series never get a record: pushes go to a prefix-skewed set.
            let pushes = prop::collection::vec(
                (
                    0..series,
                    prop_oneof![6 => 0u64..3, 2 => 3u64..60],
                    value_strategy(),
                ),
                0..3000,
            );
            let pick = prop::collection::vec(0..series, 1..=series.min(40));
            (
                Just(series),
                pushes,
                50usize..2000,
                any::<bool>(),
                any::<bool>(),
                prop::collection::vec((0u64..40_000, 0u64..40_000), 5),
                prop::collection::vec(0.0f64..=1.0, 2),
                prop::collection::vec(pick, 3),
            )
        })
        .prop_map(
            |(series, pushes, persist_every, mixed_layouts, wait_index, windows, q, picks)| {
                let mut quantiles = vec![0.0, 0.5, 0.9999, 1.0];
                quantiles.extend(q);
                Case {
                    series,
                    pushes,
                    persist_every,
                    mixed_layouts,
                    wait_index,
                    windows,
                    quantiles,
                    picks,
                }
            },
        )
}

fn brute_percentile(recs: &[Rec], set: &[usize], t0: u64, t1: u64, q: f64) -> Option<u64> {
    let mut v: Vec<u64> = recs
        .iter()
        .filter(|(s, t, _)| set.contains(s) && *t >= t0 && *t <= t1)
        .map(|r| r.2)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let k = loom::nearest_rank(q, v.len() as u64);
    Some(v[(k - 1) as usize])
}

fn brute_aggregate(recs: &[Rec], set: &[usize], t0: u64, t1: u64) -> Aggregate {
    let mut a = Aggregate::default();
    for r in recs
        .iter()
        .filter(|(s, t, _)| set.contains(s) && *t >= t0 && *t <= t1)
    {
        a.add(r.2);
    }
    a
}

fn check(reader: &Reader, c: &Case, recs: &[Rec], ids: &[SourceId]) -> Result<(), TestCaseError> {
    let top = recs.iter().map(|r| r.1).max().unwrap_or(0);
    let mut windows: Vec<(u64, u64)> = c
        .windows
        .iter()
        .map(|&(a, b)| (a % (top + 50), b % (top + 50)))
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    windows.push((0, u64::MAX));
    windows.push((top + 1, top + 10));
    windows.push((5, 4));
    let snap = reader.snapshot();
    let mut picks = c.picks.clone();
    picks.push((0..c.series).collect());
    for set in &picks {
        let mut set = set.clone();
        set.sort_unstable();
        set.dedup();
        // Repeats in the request are counted once.
        let asked: Vec<SourceId> = set.iter().chain(set.first()).map(|&i| ids[i]).collect();
        for &(t0, t1) in &windows {
            let (t0b, t1b) = if t0 > t1 { (1, 0) } else { (t0, t1) };
            for &q in &c.quantiles {
                let got = snap.percentile_many(&asked, t0, t1, q)?;
                let want = brute_percentile(recs, &set, t0b, t1b, q);
                prop_assert_eq!(got, want, "p{} of {:?} over [{}, {}]", q, set, t0, t1);
            }
            prop_assert_eq!(
                snap.count_many(&asked, t0, t1)?,
                brute_aggregate(recs, &set, t0b, t1b).count,
                "count of {:?} over [{}, {}]",
                set,
                t0,
                t1
            );
            let want = brute_aggregate(recs, &set, t0b, t1b);
            prop_assert_eq!(
                snap.aggregate_many(&asked, t0, t1)?,
                want,
                "aggregate of {:?} over [{}, {}]",
                set,
                t0,
                t1
            );
            // One extreme only: left edges answered from their summaries.
            prop_assert_eq!(snap.max_many(&asked, t0, t1)?, want.max, "max of {:?}", set);
            prop_assert_eq!(snap.min_many(&asked, t0, t1)?, want.min, "min of {:?}", set);
            // One pass, any number of ranks and the extremes asked for.
            for extremes in [
                Extremes::NONE,
                Extremes::BOTH,
                Extremes {
                    min: false,
                    max: true,
                },
            ] {
                let w = snap.window_many(&asked, t0, t1, extremes)?;
                let only = Aggregate {
                    min: want.min.filter(|_| extremes.min),
                    max: want.max.filter(|_| extremes.max),
                    ..want
                };
                prop_assert_eq!(
                    w.aggregate(),
                    only,
                    "window of {:?} over [{}, {}]",
                    set,
                    t0,
                    t1
                );
                prop_assert_eq!(w.count(), want.count);
                prop_assert_eq!(snap.aggregate_many_with(&asked, t0, t1, extremes)?, only);
                for &q in &c.quantiles {
                    prop_assert_eq!(w.percentile(q)?, brute_percentile(recs, &set, t0b, t1b, q));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn many_series_queries_equal_brute_force(c in case()) {
        let dir = tempfile::tempdir()?;
        let (mut w, r) = loom::open(dir.path(), small_config())?;
        let ids: Vec<SourceId> = (0..c.series as u64).map(|i| SourceId(1000 + i)).collect();
        let mut handles = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            let interval = if c.mixed_layouts && i % 3 == 1 { 7 } else { 50 };
            handles.push(w.declare_source(id, Some(spec(interval)))?);
        }
        let mut recs: Vec<Rec> = Vec::new();
        let mut ts = 0u64;
        for (n, &(s, dt, value)) in c.pushes.iter().enumerate() {
            ts += dt;
            w.push(handles[s], ts, &record(value, (value % 5) as usize))?;
            recs.push((s, ts, value));
            if n % c.persist_every == c.persist_every - 1 {
                w.persist()?;
            }
        }
        w.sync();
        if c.wait_index {
            w.wait_for_index()?;
        }
        check(&r, &c, &recs, &ids)?;

        // Unknown series and series without an index are errors, not empty answers.
        let missing = [ids[0], SourceId(7)];
        prop_assert!(r.percentile_many(&missing, 0, u64::MAX, 0.5).is_err());
        let plain = w.declare_source(SourceId(8), None)?;
        w.push(plain, ts, &record(1, 0))?;
        w.sync();
        prop_assert!(r.percentile_many(&[ids[0], SourceId(8)], 0, u64::MAX, 0.5).is_err());
        prop_assert_eq!(r.count_many(&[ids[0], SourceId(8)], 0, u64::MAX)?,
            brute_aggregate(&recs, &[0], 0, u64::MAX).count + 1);
        prop_assert_eq!(r.percentile_many(&[], 0, u64::MAX, 0.5)?, None);
        prop_assert!(r.percentile_many(&ids, 0, u64::MAX, 1.5).is_err());
    }

    #[test]
    fn many_series_queries_equal_brute_force_with_summaries_paged_out(c in case()) {
        let dir = tempfile::tempdir()?;
        let cfg = loom::Config { index_cache_bytes: 4096, ..small_config() };
        let ids: Vec<SourceId> = (0..c.series as u64).map(|i| SourceId(1000 + i)).collect();
        let mut recs: Vec<Rec> = Vec::new();
        {
            let (mut w, r) = loom::open(dir.path(), cfg.clone())?;
            let schemas = ids.iter().enumerate().map(|(i, &id)| {
                let interval = if c.mixed_layouts && i % 3 == 1 { 7 } else { 50 };
                (id, schema(i, interval))
            });
            let handles = w
                .declare_all(schemas.collect())?
                .into_iter()
                .collect::<Result<Vec<_>, _>>()?;
            let mut ts = 0u64;
            for (n, &(s, dt, value)) in c.pushes.iter().enumerate() {
                ts += dt;
                w.push(handles[s], ts, &record(value, (value % 5) as usize))?;
                recs.push((s, ts, value));
                if n % c.persist_every == c.persist_every - 1 {
                    w.persist()?;
                }
            }
            w.sync();
            if c.wait_index {
                w.wait_for_index()?;
            }
            check(&r, &c, &recs, &ids)?;
            w.close()?;
        }
        // Reopened, the older segments' summaries stay in their files until
        // a question reads them.
        let (_w, r) = loom::open(dir.path(), cfg)?;
        check(&r, &c, &recs, &ids)?;
    }
}
