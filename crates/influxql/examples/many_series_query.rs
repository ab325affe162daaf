//! Query latency over many series (`make many-series-query`): one store per
//! series count in `--series` (default `1,10,100`), each holding the same
//! records in total (`--rate` records/s for `--seconds` s of data, dealt
//! round-robin over the series: measurement `syscall`, tags `name =
//! 'pread64'` and one `comm` per series, the data model's latency index),
//! then the paper's questions over the 60 s window [newest − 80 s, newest −
//! 20 s], each asked `--repeat` times:
//!
//! - P2: `SELECT max(duration_us), percentile(duration_us, 99.99) FROM syscall WHERE name = 'pread64' AND …`
//! - count: `SELECT count(duration_us) FROM syscall WHERE name = 'pread64' AND …`
//!
//! Prints one line per (series count, question):
//!
//! `many-series-query series=N question=p2 records=… window_records=… first_ms=… median_ms=… min_ms=… answer=…`
//!
//! (`first_ms`: the first time the question is asked on the store, when
//! no chunk it reads from disk has been read before.)
//!
//! Uses only public APIs that older versions have too, so the same file
//! builds against main for a side-by-side comparison.

use std::time::Instant;

use influxql::rfc3339;
use influxql::{Cell, Limits};
use loom::{Config, FieldDef, FieldType, IndexDef, SourceId, SourceSchema};

fn schema(comm: u64) -> SourceSchema {
    let f = |n: &str, offset, ty| FieldDef {
        name: n.to_string().into(),
        offset,
        ty,
    };
    SourceSchema {
        measurement: "syscall".into(),
        tags: vec![
            ("comm".into(), format!("c{comm}")),
            ("name".into(), "pread64".into()),
        ],
        fields: vec![
            f("pid", 0, FieldType::U32),
            f("tid", 4, FieldType::U32),
            f("start_us", 12, FieldType::U64),
            f("duration_us", 20, FieldType::U64),
        ],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 10_000,
        }),
    }
}

struct Args {
    dir: std::path::PathBuf,
    series: Vec<u64>,
    rate: u64,
    seconds: u64,
    repeat: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        dir: std::env::temp_dir().join("loom-many-series-query"),
        series: vec![1, 10, 100],
        rate: 100_000,
        seconds: 100,
        repeat: 15,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: std::num::ParseIntError| format!("{flag} {v}: {e}");
        match flag.as_str() {
            "--dir" => a.dir = v.clone().into(),
            "--series" => {
                a.series = v
                    .split(',')
                    .map(|s| s.parse::<u64>().map_err(bad))
                    .collect::<Result<_, _>>()?;
            }
            "--rate" => a.rate = v.parse().map_err(bad)?,
            "--seconds" => a.seconds = v.parse().map_err(bad)?,
            "--repeat" => a.repeat = v.parse().map_err(bad)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

/// A heavy-tailed latency (µs): mostly 2–60, a few up to 20 ms.
fn latency(x: u64) -> u64 {
    match x % 10_000 {
        0 => 1_000 + (x >> 20) % 19_000,
        1..=100 => 60 + (x >> 20) % 1_000,
        _ => 2 + (x >> 20) % 58,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse()?;
    let t0: u64 = 1_700_000_000_000_000;
    for &n in &a.series {
        let dir = a.dir.join(format!("s{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = Config {
            sync_data: false,
            ..Config::default()
        };
        let (mut w, r) = loom::open(&dir, cfg)?;
        let handles = w
            .declare_all((0..n).map(|i| (SourceId(i + 1), schema(i))).collect())?
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let total = a.rate * a.seconds;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rec = [0u8; 28];
        for k in 0..total {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ts = t0 + k * 1_000_000 / a.rate;
            let i = (k % n) as usize;
            rec[0..4].copy_from_slice(&(i as u32).to_le_bytes());
            rec[12..20].copy_from_slice(&ts.to_le_bytes());
            rec[20..28].copy_from_slice(&latency(x).to_le_bytes());
            w.push(handles[i], ts, &rec)?;
            if k % (a.rate * 5) == 0 {
                w.sync();
            }
        }
        w.persist()?;
        w.wait_for_index()?;
        let newest = t0 + (total - 1) * 1_000_000 / a.rate;
        let (lo, hi) = (newest - 80_000_000, newest - 20_000_000);
        let time = format!(
            "time >= '{}' AND time <= '{}'",
            rfc3339(i128::from(lo) * 1000),
            rfc3339(i128::from(hi) * 1000)
        );
        let questions = [
            (
                "p2",
                format!("SELECT max(duration_us), percentile(duration_us, 99.99) FROM syscall WHERE name = 'pread64' AND {time}"),
            ),
            (
                "count",
                format!("SELECT count(duration_us) FROM syscall WHERE name = 'pread64' AND {time}"),
            ),
        ];
        let snap = r.snapshot();
        let window_records: u64 = (1..=n)
            .map(|i| snap.count(SourceId(i), lo, hi).unwrap_or(0))
            .sum();
        for (name, text) in &questions {
            let mut ms = Vec::with_capacity(a.repeat);
            let mut answer = String::new();
            for _ in 0..a.repeat.max(1) {
                let start = Instant::now();
                let out = influxql::run(&snap, text, 0, &Limits::default())?;
                ms.push(start.elapsed().as_secs_f64() * 1e3);
                let res = out.into_iter().next().ok_or("no result")??;
                answer = res
                    .series
                    .first()
                    .and_then(|s| s.values.first())
                    .map(|row| {
                        row[1..]
                            .iter()
                            .map(|c| match c {
                                Cell::UInt(v) => v.to_string(),
                                other => format!("{other:?}"),
                            })
                            .collect::<Vec<_>>()
                            .join("/")
                    })
                    .unwrap_or_else(|| "none".into());
            }
            let first = ms[0];
            ms.sort_by(f64::total_cmp);
            println!(
                "many-series-query series={n} question={name} records={total} window_records={window_records} first_ms={first:.2} median_ms={:.2} min_ms={:.2} answer={answer}",
                ms[ms.len() / 2],
                ms[0]
            );
        }
        drop(snap);
        w.close()?;
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
