//! Index modes (the ablation): one count statement answered through each
//! mode equals brute force, each mode reads what it should, and statements a
//! mode cannot answer are refused, not answered through other indexes.

use influxql::{Access, Cell, Error, Limits};
use loom::{Config, FieldDef, FieldType, IndexDef, IndexMode, SourceId, SourceSchema};

const N: u64 = 200_000;

fn latency(i: u64) -> u64 {
    // Fast but for one burst: a count over > 80 µs needs only its chunks.
    if (100_000..100_500).contains(&i) {
        500 + i % 300
    } else {
        i % 70
    }
}

#[test]
fn every_mode_counts_exactly_and_reads_its_own_way() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        chunk_size: 4096,
        ..Config::default()
    };
    let (mut w, r) = loom::open(dir.path(), cfg).expect("open");
    let h = w
        .declare(
            SourceId(1),
            SourceSchema {
                measurement: "kv".into(),
                tags: vec![("op".into(), "read".into())],
                fields: vec![FieldDef {
                    name: "duration_us".into(),
                    offset: 0,
                    ty: FieldType::U64,
                }],
                index: Some(IndexDef {
                    field: "duration_us".into(),
                    min: 0,
                    interval: 10,
                    n_bins: 128,
                }),
            },
        )
        .expect("declare");
    for i in 0..N {
        w.push(h, 1_000 + i, &latency(i).to_le_bytes())
            .expect("push");
    }
    w.sync();
    w.wait_for_index().expect("indexed");
    let (t0, t1) = (50_000u64, 150_000u64);
    let want = (0..N)
        .filter(|&i| (t0..=t1).contains(&(1_000 + i)) && latency(i) > 80)
        .count() as u64;
    assert!(want > 0);
    let text = format!(
        "SELECT count(duration_us) FROM kv WHERE op = 'read' AND duration_us > 80 AND time >= {} AND time <= {}",
        t0 * 1000,
        t1 * 1000 + 999
    );
    let snap = r.snapshot();
    let mut read = Vec::new();
    for mode in [
        IndexMode::NoIndex,
        IndexMode::TimeOnly,
        IndexMode::RangeOnly,
        IndexMode::TimeRange,
    ] {
        let mut access = Access::with_mode(mode);
        let got = influxql::run_with(&snap, &text, 0, &Limits::default(), &mut access)
            .expect("plans")
            .remove(0)
            .expect("runs");
        assert_eq!(got.series[0].values[0][1], Cell::UInt(want), "{mode:?}");
        read.push(access.chunks_read);
    }
    let [none, time, range, both] = [read[0], read[1], read[2], read[3]];
    assert!(
        none > time,
        "no index walks back from the newest chunk: {read:?}"
    );
    assert!(
        time > both,
        "time+range skips chunks without slow reads: {read:?}"
    );
    assert!(range >= both, "{read:?}");

    // Not a bounded count: refused under a mode other than TimeRange.
    let mut access = Access::with_mode(IndexMode::NoIndex);
    let r = influxql::run_with(
        &snap,
        "SELECT max(duration_us) FROM kv",
        0,
        &Limits::default(),
        &mut access,
    )
    .expect("plans")
    .remove(0);
    assert!(matches!(r, Err(Error::Unsupported(_))), "{r:?}");
    // An absent measurement is an empty result under every mode.
    let r = influxql::run_with(
        &snap,
        "SELECT count(x) FROM nope",
        0,
        &Limits::default(),
        &mut access,
    )
    .expect("plans")
    .remove(0)
    .expect("runs");
    assert!(r.series.is_empty());
}
