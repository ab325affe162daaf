//! The paper's P2 shape over many series: `percentile`, `max` and `count`
//! (and `min`, `sum`, `mean`, answered from the same pass) of `duration_us` `FROM syscall WHERE name = 'pread64'` when 1 to 200
//! series (one per `comm`) carry that name, some of them empty, beside
//! series of another name that must not count. Every answer equals brute
//! force over the same records, computed here from the records and
//! InfluxDB's rank rule (`floor(n·N/100 + 0.5)`), not from the engine.

use influxql::rfc3339;
use influxql::{Cell, Limits};
use loom::{Config, FieldDef, FieldType, FlushMode, IndexDef, SourceId, SourceSchema};
use proptest::prelude::*;

fn schema(name: &str, comm: usize) -> SourceSchema {
    let f = |n: &str, offset, ty| FieldDef {
        name: n.to_string().into(),
        offset,
        ty,
    };
    SourceSchema {
        measurement: "syscall".into(),
        tags: vec![
            ("comm".into(), format!("c{comm}")),
            ("name".into(), name.into()),
        ],
        fields: vec![
            f("pid", 0, FieldType::U32),
            f("start_us", 8, FieldType::U64),
            f("duration_us", 16, FieldType::U64),
        ],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 40,
        }),
    }
}

fn record(pid: u32, start: u64, duration: u64) -> Vec<u8> {
    let mut v = vec![0u8; 24];
    v[0..4].copy_from_slice(&pid.to_le_bytes());
    v[8..16].copy_from_slice(&start.to_le_bytes());
    v[16..24].copy_from_slice(&duration.to_le_bytes());
    v
}

fn config() -> Config {
    Config {
        chunk_size: 512,
        block_size: 8192,
        segment_size: 8192 * 4,
        max_blocks_in_memory: 2,
        flush_mode: FlushMode::Direct,
        sync_data: false,
        max_index_lag: 16,
        first_chunk_bytes: 64,
        ..Config::default()
    }
}

/// InfluxDB 1.x's percentile of `v` (sorted): rank `floor(n·N/100 + 0.5)`,
/// null outside `1..=n`.
fn influx_percentile(v: &[u64], n_percent: f64) -> Cell {
    let r = ((v.len() as f64) * n_percent / 100.0 + 0.5).floor();
    if r < 1.0 || r > v.len() as f64 {
        return Cell::Null;
    }
    Cell::UInt(v[r as usize - 1])
}

/// The cells after `time` of the statement's one row; nulls when it has none.
fn row(snap: &loom::Snapshot, text: &str, width: usize) -> Result<Vec<Cell>, TestCaseError> {
    let mut out = influxql::run(snap, text, 0, &Limits::default())
        .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
    let res = out
        .remove(0)
        .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
    let cells = res
        .series
        .first()
        .and_then(|s| s.values.first())
        .map(|r| r[1..].to_vec())
        .unwrap_or_else(|| vec![Cell::Null; width]);
    Ok(cells)
}

#[derive(Debug, Clone)]
struct Case {
    series: usize,
    /// (series, time step, duration) in push order; series `series..` are `write`.
    pushes: Vec<(usize, u64, u64)>,
    persist_every: usize,
    windows: Vec<(u64, u64)>,
    percents: Vec<f64>,
}

fn case() -> impl Strategy<Value = Case> {
    prop_oneof![3 => 1usize..10, 2 => 10usize..=200]
        .prop_flat_map(|series| {
            (
                Just(series),
                prop::collection::vec(
                    (
                        0..series + 2,
                        prop_oneof![6 => 0u64..3, 2 => 3u64..80],
                        prop_oneof![
                            4 => prop::sample::select(vec![0u64, 5, 10, 11, 250, 399, 400]),
                            4 => 0u64..500,
                            1 => 500u64..10_000,
                        ],
                    ),
                    0..2500,
                ),
                40usize..1500,
                prop::collection::vec((0u64..60_000, 0u64..60_000), 4),
                prop::collection::vec(0.0f64..=100.0, 1),
            )
        })
        .prop_map(|(series, pushes, persist_every, windows, p)| {
            let mut percents = vec![0.0, 50.0, 99.99, 100.0];
            percents.extend(p);
            Case {
                series,
                pushes,
                persist_every,
                windows,
                percents,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]

    #[test]
    fn percentile_count_max_over_many_series_equal_brute_force(c in case()) {
        let dir = tempfile::tempdir()?;
        let (mut w, r) = loom::open(dir.path(), config())?;
        // Series 0..series are pread64 (one comm each); two more are `write`.
        let mut handles = Vec::new();
        for i in 0..c.series + 2 {
            let name = if i < c.series { "pread64" } else { "write" };
            handles.push(w.declare(SourceId(500 + i as u64), schema(name, i))?);
        }
        let mut recs: Vec<(usize, u64, u64)> = Vec::new();
        let mut ts = 1_000u64;
        for (n, &(s, dt, d)) in c.pushes.iter().enumerate() {
            ts += dt;
            w.push(handles[s], ts, &record(s as u32, ts, d))?;
            recs.push((s, ts, d));
            if n % c.persist_every == c.persist_every - 1 {
                w.persist()?;
            }
        }
        w.sync();
        let snap = r.snapshot();
        let top = ts + 100;
        let mut windows: Vec<(u64, u64)> = c
            .windows
            .iter()
            .map(|&(a, b)| (a % top, b % top))
            .map(|(a, b)| (a.min(b), a.max(b)))
            .collect();
        windows.push((0, top));
        for (t0, t1) in windows {
            let mut v: Vec<u64> = recs
                .iter()
                .filter(|(s, t, _)| *s < c.series && *t >= t0 && *t <= t1)
                .map(|r| r.2)
                .collect();
            v.sort_unstable();
            let time = format!(
                "time >= '{}' AND time <= '{}'",
                rfc3339(i128::from(t0) * 1000),
                rfc3339(i128::from(t1) * 1000)
            );
            for &p in &c.percents {
                let text = format!(
                    "SELECT max(duration_us), percentile(duration_us, {p}), count(duration_us) \
                     FROM syscall WHERE name = 'pread64' AND {time}"
                );
                let got = row(&snap, &text, 3)?;
                let max = v.last().map_or(Cell::Null, |&m| Cell::UInt(m));
                let count = Cell::UInt(v.len() as u64);
                let got_count = if got[2] == Cell::Null { Cell::UInt(0) } else { got[2].clone() };
                prop_assert_eq!(&got[0], &max, "{}", text);
                prop_assert_eq!(&got[1], &influx_percentile(&v, p), "{}", text);
                prop_assert_eq!(&got_count, &count, "{}", text);

                let alone = format!(
                    "SELECT percentile(duration_us, {p}) FROM syscall WHERE name = 'pread64' AND {time}"
                );
                prop_assert_eq!(&row(&snap, &alone, 1)?[0], &influx_percentile(&v, p), "{}", alone);
            }
            // count() alone: the time index, no range index.
            let text = format!(
                "SELECT count(duration_us) FROM syscall WHERE name = 'pread64' AND {time}"
            );
            let got = row(&snap, &text, 1)?;
            let got = if got[0] == Cell::Null { Cell::UInt(0) } else { got[0].clone() };
            prop_assert_eq!(got, Cell::UInt(v.len() as u64), "{}", text);
            // Every other indexed function from the same one pass.
            let text = format!(
                "SELECT min(duration_us), sum(duration_us), mean(duration_us), \
                 percentile(duration_us, 50) FROM syscall WHERE name = 'pread64' AND {time}"
            );
            let sum: u128 = v.iter().map(|&d| u128::from(d)).sum();
            let want = if v.is_empty() {
                vec![Cell::Null; 4]
            } else {
                vec![
                    Cell::UInt(v[0]),
                    u64::try_from(sum).map_or(Cell::Float(sum as f64), Cell::UInt),
                    Cell::Float(sum as f64 / v.len() as f64),
                    influx_percentile(&v, 50.0),
                ]
            };
            prop_assert_eq!(row(&snap, &text, 4)?, want.clone(), "{}", text);
            // Without a percentile: no merged bins, one aggregate pass.
            let text = format!(
                "SELECT max(duration_us), sum(duration_us), min(duration_us) \
                 FROM syscall WHERE name = 'pread64' AND {time}"
            );
            let want = if v.is_empty() {
                vec![Cell::Null; 3]
            } else {
                vec![Cell::UInt(v[v.len() - 1]), want[1].clone(), Cell::UInt(v[0])]
            };
            prop_assert_eq!(row(&snap, &text, 3)?, want, "{}", text);
        }
    }
}
