//! [`WindowBins`](super::WindowBins) over windows with more chunks than it
//! keeps for the rank pass (`MAX_KEPT` is 4 in test builds: the rank pass
//! then finds them again), before and after a reopen, with the compact
//! copies of the summaries (`index::compact`): ranks, count, sum and
//! extremes equal sorting the window's values. Paged summaries' compact
//! copies are covered by `tests/fine_percentiles.rs` and
//! `tests/index_paging.rs` (reopens and a tiny index budget).

use super::MAX_KEPT;
use crate::schema::{FieldDef, FieldType, IndexDef, SourceSchema};
use crate::{Config, Extremes, FlushMode, SourceId};

fn config() -> Config {
    Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Direct,
        sync_data: false,
        first_chunk_bytes: 64,
        // Summaries of complete segments may be paged out and read back.
        index_cache_bytes: 16 << 10,
        ..Config::default()
    }
}

fn schema() -> SourceSchema {
    SourceSchema {
        measurement: "m".into(),
        tags: vec![],
        fields: vec![FieldDef {
            name: "value".into(),
            offset: 0,
            ty: FieldType::U64,
        }],
        index: Some(IndexDef {
            field: "value".into(),
            min: 0,
            interval: 10,
            n_bins: 100,
        }),
    }
}

/// A spread of values: most in a body, some past the last bin.
fn value(i: u64) -> u64 {
    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    if x.is_multiple_of(17) {
        1_000 + x % 5_000
    } else {
        x % 700
    }
}

/// Checks every window of `windows` against sorting the model's values;
/// returns how many had more chunks than are kept.
fn check(snap: &crate::Snapshot, model: &[(u64, u64)], windows: &[(u64, u64)]) -> usize {
    let mut unkept = 0;
    for &(t0, t1) in windows {
        let mut want: Vec<u64> = model
            .iter()
            .filter(|(t, _)| (t0..=t1).contains(t))
            .map(|&(_, v)| v)
            .collect();
        want.sort_unstable();
        let w = snap
            .window_many(&[SourceId(3)], t0, t1, Extremes::BOTH)
            .unwrap();
        unkept += usize::from(w.parts.is_none());
        let a = w.aggregate();
        assert_eq!(a.count, want.len() as u64, "{t0}..{t1}");
        assert_eq!(
            a.sum,
            want.iter().map(|&v| u128::from(v)).sum(),
            "{t0}..{t1}"
        );
        assert_eq!(
            (a.min, a.max),
            (want.first().copied(), want.last().copied())
        );
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            let at = (!want.is_empty()).then(|| {
                want[(crate::query::percentile::nearest_rank(q, want.len() as u64) - 1) as usize]
            });
            assert_eq!(w.percentile(q).unwrap(), at, "{t0}..{t1} q {q}");
        }
    }
    unkept
}

#[test]
fn ranks_over_more_chunks_than_kept_answer_as_sorting() {
    assert_eq!(MAX_KEPT, 4);
    let dir = tempfile::tempdir().unwrap();
    let mut model = Vec::new();
    let windows: Vec<(u64, u64)> = (0..40u64)
        .map(|k| (k * 97, k * 97 + 40))
        .chain([(0, u64::MAX), (150, 3_000), (1_001, 1_999)])
        .collect();
    {
        let (mut w, r) = crate::open(dir.path(), config()).unwrap();
        let h = w.declare(SourceId(3), schema()).unwrap();
        for i in 0..6_000u64 {
            let v = value(i);
            w.push(h, i / 2, &v.to_le_bytes()).unwrap();
            model.push((i / 2, v));
            if i.is_multiple_of(700) {
                w.persist().unwrap();
            }
        }
        w.persist().unwrap();
        w.sync();
        w.wait_for_index().unwrap();
        let unkept = check(&r.snapshot(), &model, &windows);
        // Small windows keep their chunks, the large ones do not.
        assert!(unkept >= 3 && unkept < windows.len(), "{unkept}");
        w.close().unwrap();
    }
    // Reopened: summaries as a reopen reads them back.
    let r = crate::open_read_only(dir.path()).unwrap();
    let unkept = check(&r.snapshot(), &model, &windows);
    assert!(unkept >= 3, "{unkept}");
}
