//! Quick single-writer ingest rate check: `cargo run --release --example
//! ingest_probe -- <dir> <record bytes> <seconds> [index]`. The full
//! benchmark with baselines is `baselines/ingest-scaling`.

use std::time::{Duration, Instant};

use loom::{Config, RangeIndexSpec, SourceId};

fn first_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(a)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir =
        std::path::PathBuf::from(args.get(1).map(String::as_str).unwrap_or("/tmp/loom-probe"));
    let size: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(8);
    let secs: u64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let index = args.get(4).is_some_and(|s| s == "index");
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = Config::default();
    if std::env::var("LOOM_NO_SYNC").is_ok() {
        cfg.sync_data = false;
    }
    if let Ok(b) = std::env::var("LOOM_BLOCK_MB") {
        cfg.block_size = b.parse::<usize>()? << 20;
    }
    let (mut w, _r) = loom::open(&dir, cfg)?;
    let spec = index.then_some(RangeIndexSpec {
        extractor: first_u64,
        min: 0,
        interval: 1 << 58,
        n_bins: 16,
    });
    let h = w.declare_source(SourceId(1), spec)?;
    let payload: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut n: u64 = 0;
    let mut next_sync = start + Duration::from_secs(1);
    let mut ts = 0u64;
    loop {
        for _ in 0..64 {
            w.push(h, ts, &payload)?;
        }
        n += 64;
        let now = Instant::now();
        ts = now.duration_since(start).as_micros() as u64;
        if now >= next_sync {
            w.sync();
            next_sync += Duration::from_secs(1);
            if now >= end {
                break;
            }
        }
    }
    let el = start.elapsed().as_secs_f64();
    println!(
        "size={size} records/s={:.0} MB/s={:.1} stats={:?}",
        n as f64 / el,
        n as f64 * size as f64 / el / 1e6,
        w.stats()
    );
    w.close()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
