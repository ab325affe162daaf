//! Every query, on many generated stores, equals brute force over the same
//! records: windows in memory, on disk, across both, empty, beyond the data,
//! before and after a reopen; and again with the range index declared in a
//! schema (summaries persisted) and an index-cache budget so small that
//! nearly every summary is paged out and read back from the segment index
//! files.

mod common;

use common::{record, small_config, spec, value_of, Model};
use loom::{FieldDef, FieldType, IndexDef, IndexMode, Reader, SourceId, SourceSchema};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Push {
        source: usize,
        dt: u64,
        value: u64,
        extra: usize,
    },
    Persist,
}

fn value_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0u64..100,
        6 => 100u64..1100,
        2 => 1100u64..100_000,
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

fn op_strategy(n_sources: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        50 => (0..n_sources, prop_oneof![8 => 0u64..3, 2 => 3u64..100, 1 => 1000u64..5000], value_strategy(), prop_oneof![6 => Just(0usize), 3 => 0usize..24, 1 => 100usize..400])
            .prop_map(|(source, dt, value, extra)| Op::Push { source, dt, value, extra }),
        1 => Just(Op::Persist),
    ]
}

type Scenario = (usize, Vec<Op>, Vec<(u64, u64)>, Vec<(u64, u64)>);

fn scenario() -> impl Strategy<Value = Scenario> {
    (1usize..5).prop_flat_map(|n| {
        (
            Just(n),
            prop::collection::vec(op_strategy(n), 0..2500),
            prop::collection::vec((0u64..120_000, 0u64..120_000), 6),
            prop::collection::vec((value_strategy(), value_strategy()), 3),
        )
    })
}

fn check_all(
    reader: &Reader,
    model: &Model,
    ids: &[SourceId],
    windows: &[(u64, u64)],
    ranges: &[(u64, u64)],
) -> Result<(), TestCaseError> {
    let top = model.max_ts();
    let mut all_windows: Vec<(u64, u64)> = windows
        .iter()
        .map(|&(a, b)| (a.min(b) % (top + 2), a.max(b) % (top + 2)))
        .collect();
    all_windows.push((0, u64::MAX));
    all_windows.push((top + 1, top + 1000));
    all_windows.push((top / 2, top / 2));
    all_windows.push((10, 5));
    let snap = reader.snapshot();
    for &id in ids {
        for &(t0, t1) in &all_windows {
            prop_assert_eq!(
                snap.aggregate(id, t0, t1)?,
                model.aggregate(id, t0, t1),
                "aggregate {:?} {}..{}",
                id,
                t0,
                t1
            );
            prop_assert_eq!(
                snap.aggregate_raw(id, t0, t1, value_of)?,
                model.aggregate(id, t0, t1)
            );
            for q in [0.0, 0.5, 0.9, 0.99, 0.9999, 1.0] {
                prop_assert_eq!(
                    snap.percentile(id, t0, t1, q)?,
                    model.percentile(id, t0, t1, q),
                    "p{} {:?} {}..{}",
                    q,
                    id,
                    t0,
                    t1
                );
            }
            let mut sorted: Vec<u64> = model
                .window(id, t0, t1)
                .map(|(_, _, b)| value_of(b))
                .collect();
            sorted.sort_unstable();
            let n = sorted.len() as u64;
            for k in [0, 1, n / 3, n, n + 1] {
                let want = (k >= 1 && k <= n).then(|| sorted[(k - 1) as usize]);
                prop_assert_eq!(
                    snap.value_at_rank(id, t0, t1, |m| {
                        assert_eq!(m, n);
                        k
                    })?,
                    want,
                    "rank {} of {}",
                    k,
                    n
                );
            }
            let mut raw = Vec::new();
            snap.scan(id, t0, t1, |t, b| raw.push((t, b.to_vec())))?;
            prop_assert_eq!(raw, model.scan(id, t0, t1));
            for &(a, b) in ranges {
                let (lo, hi) = (a.min(b), a.max(b));
                let mut got = Vec::new();
                snap.range_scan(id, t0, t1, lo, hi, |t, v, bytes| {
                    got.push((t, v, bytes.to_vec()))
                })?;
                let want = model.range(id, t0, t1, lo, hi);
                prop_assert_eq!(&got, &want, "range {}..={} window {}..{}", lo, hi, t0, t1);
                let mut counts = Vec::new();
                for mode in [
                    IndexMode::NoIndex,
                    IndexMode::TimeOnly,
                    IndexMode::RangeOnly,
                    IndexMode::TimeRange,
                ] {
                    let r = snap.count_matching(id, t0, t1, lo, hi, mode)?;
                    prop_assert_eq!(r.count, want.len() as u64, "{:?}", mode);
                    counts.push(r.chunks_read);
                }
                // Chunks read: each index may only remove chunks from what
                // a weaker mode reads. The not-yet-indexed tail is scanned by
                // every mode and not counted; chunks the indexer has not
                // summarised yet count as "may hold" in both range modes, so
                // the order holds before and after `wait_for_index`.
                let [no_index, time_only, range_only, time_range] = counts[..] else {
                    unreachable!("four modes")
                };
                let order = format!(
                    "chunks read: no index {no_index}, time {time_only}, range {range_only}, \
                     time+range {time_range}; window {t0}..{t1} range {lo}..={hi}"
                );
                prop_assert!(time_range <= time_only, "{}", order);
                prop_assert!(time_only <= no_index, "{}", order);
                prop_assert!(time_range <= range_only, "{}", order);
                prop_assert!(range_only <= no_index, "{}", order);
            }
        }
    }
    Ok(())
}

/// The index of `common::spec()` declared in a schema: the same bins over
/// the same value (the first 8 bytes, 0 for a shorter record), persisted
/// in the segment index files, so its summaries can be paged.
fn schema() -> SourceSchema {
    SourceSchema {
        measurement: "paged".into(),
        tags: vec![],
        fields: vec![FieldDef {
            name: "v".into(),
            offset: 0,
            ty: FieldType::U64,
        }],
        index: Some(IndexDef {
            field: "v".into(),
            min: 100,
            interval: 50,
            n_bins: 20,
        }),
    }
}

/// Index-cache budget of the paged runs: summaries of a few chunks.
const TINY_BUDGET: usize = 4096;

fn config(paged: bool) -> loom::Config {
    loom::Config {
        index_cache_bytes: if paged { TINY_BUDGET } else { 64 << 20 },
        ..small_config()
    }
}

fn declare(w: &mut loom::Writer, id: SourceId, paged: bool) -> loom::Result<loom::SourceHandle> {
    if paged {
        w.declare(id, schema())
    } else {
        w.declare_source(id, Some(spec()))
    }
}

fn run_scenario((n, ops, windows, ranges): Scenario, paged: bool) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir()?;
    let ids: Vec<SourceId> = (0..n).map(|i| SourceId(0x1000 + i as u64)).collect();
    let mut model = Model::default();
    {
        let (mut w, r) = loom::open(dir.path(), config(paged))?;
        let handles: Vec<_> = ids
            .iter()
            .map(|&id| declare(&mut w, id, paged))
            .collect::<Result<_, _>>()?;
        let mut ts = vec![0u64; n];
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Push {
                    source,
                    dt,
                    value,
                    extra,
                } => {
                    ts[source] += dt;
                    let b = record(value, extra);
                    let addr = w.push(handles[source], ts[source], &b)?;
                    prop_assert_eq!(
                        addr.seq as usize,
                        model.records.iter().filter(|x| x.0 == ids[source]).count()
                    );
                    model.records.push((ids[source], ts[source], b));
                }
                Op::Persist => w.persist()?,
            }
            if i % 97 == 0 {
                w.sync();
            }
        }
        w.sync();
        // Once with whatever the indexer has summarised, once with all.
        check_all(&r, &model, &ids, &windows, &ranges)?;
        w.wait_for_index()?;
        check_all(&r, &model, &ids, &windows, &ranges)?;
        // point lookups by address
        for (k, (id, t, b)) in model.records.iter().enumerate().step_by(37) {
            let seq = model.records[..k].iter().filter(|x| x.0 == *id).count() as u64;
            let got = r.get(loom::RecordAddress { source: *id, seq })?;
            prop_assert_eq!(got, Some((*t, b.clone())));
        }
        w.close()?;
    }
    // Reopen: everything was persisted by close; an extractor's index is
    // rebuilt on declare, a schema's summaries come from the index files
    // (paged: left there until a query reads them).
    let (mut w, r) = loom::open(dir.path(), config(paged))?;
    prop_assert!(w.dropped_tail().is_none(), "{:?}", w.dropped_tail());
    for &id in &ids {
        declare(&mut w, id, paged)?;
    }
    w.wait_for_index()?;
    check_all(&r, &model, &ids, &windows, &ranges)?;
    if paged {
        let m = r.snapshot().index_memory();
        prop_assert!(
            (TINY_BUDGET / 2..=TINY_BUDGET).contains(&m.cache_budget),
            "{:?}",
            m
        );
        // Summaries were read back whenever a query met a chunk of a
        // complete segment other than the newest few (the reopen decodes
        // index files of TINY_BUDGET / 12 bytes at most, so of two larger
        // than TINY_BUDGET / 8 at least one complete one stays paged).
        let segments = std::fs::read_dir(dir.path())?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".idx"))
            .filter(|e| {
                e.metadata()
                    .is_ok_and(|m| m.len() > (TINY_BUDGET / 8) as u64)
            })
            .count();
        if segments >= 2 {
            prop_assert!(m.page_loads > 0, "{} index files, {:?}", segments, m);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    #[test]
    fn queries_match_brute_force(s in scenario()) {
        run_scenario(s, false)?;
    }

    #[test]
    fn queries_match_brute_force_with_summaries_paged_out(s in scenario()) {
        run_scenario(s, true)?;
    }
}

#[test]
fn percentile_of_heavy_tail_over_many_blocks() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cfg = loom::Config {
        chunk_size: 4096,
        block_size: 65536,
        segment_size: 65536 * 8,
        ..loom::Config::default()
    };
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    let id = SourceId(9);
    let h = w.declare_source(id, Some(spec()))?;
    let mut model = Model::default();
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for i in 0..200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = if x.is_multiple_of(1000) {
            5000 + x % 100_000
        } else {
            80 + x % 900
        };
        let b = record(v, 0);
        w.push(h, i / 10, &b)?;
        model.records.push((id, i / 10, b));
    }
    w.sync();
    for (t0, t1) in [(0, 19_999), (1234, 15_000), (19_000, 30_000)] {
        for q in [0.5, 0.99, 0.9999] {
            assert_eq!(
                r.percentile(id, t0, t1, q)?,
                model.percentile(id, t0, t1, q)
            );
        }
        assert_eq!(r.aggregate(id, t0, t1)?, model.aggregate(id, t0, t1));
    }
    Ok(())
}
