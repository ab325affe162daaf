//! Memory of the engine with many series (`make many-series-rss`): declares
//! `--series` syscall-like series (measurement `syscall`, tags `name`,
//! `comm`, the latency range index of the data model: 10 000 bins), pushes
//! `--rate` records per second into each and `--hot-rate` into the first
//! `--hot` of them, persisting once per second of data as loom-app does,
//! for `--seconds` seconds of data (simulated time: pushed as fast as the
//! engine takes them). Prints one line:
//!
//! `many-series series=N hot=H rate=R hot_rate=HR seconds=S records=… rss_mb=… hwm_mb=… elapsed_s=…`
//!
//! where `rss_mb` is the process's resident memory at the end (`VmRSS`),
//! `hwm_mb` its peak (`VmHWM`). Uses only the engine's public API, so the
//! same file builds against older versions of the engine for a side-by-side
//! comparison.

use std::time::Instant;

use loom::{Config, FieldDef, FieldType, IndexDef, SourceId, SourceSchema};

struct Args {
    dir: std::path::PathBuf,
    series: u64,
    hot: u64,
    rate: u64,
    hot_rate: u64,
    seconds: u64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        dir: std::env::temp_dir().join("loom-many-series"),
        series: 10_000,
        hot: 0,
        rate: 3,
        hot_rate: 100_000,
        seconds: 60,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let n = || {
            value
                .parse::<u64>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--dir" => a.dir = value.clone().into(),
            "--series" => a.series = n()?,
            "--hot" => a.hot = n()?,
            "--rate" => a.rate = n()?,
            "--hot-rate" => a.hot_rate = n()?,
            "--seconds" => a.seconds = n()?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

fn schema(i: u64) -> SourceSchema {
    let f = |name: &str, offset, ty| FieldDef {
        name: name.to_string().into(),
        offset,
        ty,
    };
    SourceSchema {
        measurement: "syscall".into(),
        tags: vec![
            ("comm".into(), format!("proc-{}", i / 20)),
            ("name".into(), format!("sys-{}", i % 20)),
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

/// A 28-byte syscall record.
fn record(i: u64, ts: u64, x: u64) -> [u8; 28] {
    let mut b = [0u8; 28];
    b[0..4].copy_from_slice(&(i as u32).to_le_bytes());
    b[4..8].copy_from_slice(&(i as u32).to_le_bytes());
    b[12..20].copy_from_slice(&ts.to_le_bytes());
    b[20..28].copy_from_slice(&(5 + x % 200).to_le_bytes());
    b
}

fn status_mb(key: &str) -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse()?;
    let _ = std::fs::remove_dir_all(&a.dir);
    let cfg = Config {
        sync_data: false,
        ..Config::default()
    };
    let (mut w, r) = loom::open(&a.dir, cfg)?;
    // One catalog write for all (declaring one by one rewrites it each time).
    let handles = w
        .declare_all(
            (0..a.series)
                .map(|i| (SourceId(i + 1), schema(i)))
                .collect(),
        )?
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let t0: u64 = 1_700_000_000_000_000;
    let start = Instant::now();
    let mut records = 0u64;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for sec in 0..a.seconds {
        let base = t0 + sec * 1_000_000;
        // Slow series: `rate` records each, spread over the second.
        for k in 0..a.rate {
            let ts = base + k * 1_000_000 / a.rate.max(1);
            for (i, &h) in handles.iter().enumerate().skip(a.hot as usize) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.push(h, ts, &record(i as u64, ts, x))?;
                records += 1;
            }
        }
        // Hot series: `hot_rate` records each.
        for k in 0..a.hot_rate {
            let ts = base + k * 1_000_000 / a.hot_rate.max(1);
            for (i, &h) in handles.iter().enumerate().take(a.hot as usize) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.push(h, ts, &record(i as u64, ts, x))?;
                records += 1;
            }
        }
        w.sync();
        w.persist()?;
    }
    w.wait_for_index()?;
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "many-series series={} hot={} rate={} hot_rate={} seconds={} records={} rss_mb={:.1} hwm_mb={:.1} elapsed_s={:.2}",
        a.series,
        a.hot,
        a.rate,
        a.hot_rate,
        a.seconds,
        records,
        status_mb("VmRSS:"),
        status_mb("VmHWM:"),
        elapsed
    );
    eprintln!(
        "index held by series 1: {:?}",
        r.snapshot().index_held(SourceId(1))
    );
    w.close()?;
    let _ = std::fs::remove_dir_all(&a.dir);
    Ok(())
}
