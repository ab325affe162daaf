//! Engine demo: ingest generated telemetry at full speed on one thread while
//! another thread asks the window questions of the RocksDB phases, printing
//! each answer, its latency and a brute-force cross-check.
//!
//! `cargo run --release -p loom --example demo -- [--seconds S] [--dir DIR]`
//!
//! Records are KV-op-like (24 bytes: thread, op, start, latency µs) from
//! three sources; timestamps are virtual microseconds (each source emits one
//! record every 2-3 µs of virtual time), so brute force can regenerate exactly
//! the records any snapshot holds.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::{Config, IndexMode, RangeIndexSpec, Snapshot, SourceId};

const SOURCES: [(&str, u64); 3] = [
    ("kv/read", 0x5a11),
    ("kv/write", 0x5a12),
    ("syscall/pread64", 0x5a13),
];
const WINDOW_FROM_S: u64 = 8;
const WINDOW_TO_S: u64 = 2;
const SLOW_US: u64 = 5_000;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 31;
    x = x.wrapping_mul(0x7fb5d329728ea185);
    x ^= x >> 27;
    x = x.wrapping_mul(0x81dadef4bc2dd44d);
    x ^ (x >> 33)
}

/// Record k of source s: (virtual timestamp µs, latency µs). Latencies have a
/// lognormal-like body around 20-200 µs, a 0.1 % tail up to 50 ms, and slow
/// bursts every few virtual seconds.
fn gen(s: u64, k: u64) -> (u64, u64) {
    let h = mix(s.wrapping_mul(0x9e3779b97f4a7c15) ^ k);
    let ts = k * 2 + (h & 1) + s;
    let body = 20 + (h >> 8) % 60 + ((h >> 16) % 60) * ((h >> 24) % 3);
    let lat = if (h >> 32).is_multiple_of(1000) {
        1_000 + (h >> 40) % 49_000
    } else if (ts / 1_000_000) % 7 == 3 && (h >> 36).is_multiple_of(50) {
        SLOW_US + (h >> 44) % 5_000
    } else {
        body
    };
    (ts, lat)
}

fn encode(s: u64, k: u64, ts: u64, lat: u64) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0..4].copy_from_slice(&((k % 16) as u32).to_le_bytes());
    b[4] = (s == 0x5a12) as u8;
    b[8..16].copy_from_slice(&ts.to_le_bytes());
    b[16..24].copy_from_slice(&lat.to_le_bytes());
    b
}

fn latency(b: &[u8]) -> u64 {
    b.get(16..24)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn brute(snap: &Snapshot, id: SourceId, s: u64, t0: u64, t1: u64) -> Vec<u64> {
    let n = snap.record_count(id);
    (0..n)
        .map(|k| gen(s, k))
        .filter(|(t, _)| *t >= t0 && *t <= t1)
        .map(|(_, l)| l)
        .collect()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn check(ok: bool) -> &'static str {
    if ok {
        "match"
    } else {
        "MISMATCH"
    }
}

/// `--seconds S` (default 12) and `--dir DIR` (default a temporary directory).
fn parse_args() -> Result<(u64, PathBuf), Box<dyn std::error::Error>> {
    let mut seconds = 12u64;
    let mut dir = std::env::temp_dir().join(format!("loom-demo-{}", std::process::id()));
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--seconds needs a whole number")?
            }
            "--dir" => dir = args.next().ok_or("--dir needs a path")?.into(),
            other => {
                return Err(format!("unknown flag {other}; allowed: --seconds S, --dir DIR").into())
            }
        }
    }
    Ok((seconds, dir))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (seconds, dir) = parse_args()?;
    let _ = std::fs::remove_dir_all(&dir);
    let (mut w, reader) = loom::open(&dir, Config::default())?;
    let spec = RangeIndexSpec {
        extractor: latency,
        min: 0,
        interval: 128,
        n_bins: 512,
    };
    let handles: Vec<_> = SOURCES
        .iter()
        .map(|(_, id)| w.declare_source(SourceId(*id), Some(spec)))
        .collect::<Result<_, _>>()?;
    println!("Loom engine demo: store {}; {} s of ingest; queries every 3 s over [now-{WINDOW_FROM_S} s, now-{WINDOW_TO_S} s]", dir.display(), seconds);
    let stop = Arc::new(AtomicBool::new(false));
    let mismatches = Arc::new(AtomicU64::new(0));
    let q = {
        let stop = Arc::clone(&stop);
        let mismatches = Arc::clone(&mismatches);
        std::thread::spawn(move || -> Result<u32, loom::Error> {
            let mut rounds = 0;
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_secs(3));
                if ask(&reader.snapshot(), rounds + 1, &mismatches)? {
                    rounds += 1;
                }
            }
            Ok(rounds)
        })
    };
    let start = Instant::now();
    ingest(&mut w, &handles, Duration::from_secs(seconds))?;
    stop.store(true, Ordering::Release);
    let rounds = q.join().map_err(|_| "query thread panicked")??;
    let stats = w.stats();
    w.close()?;
    let _ = std::fs::remove_dir_all(&dir);
    let bad = mismatches.load(Ordering::Relaxed);
    println!("summary: {} records ingested in {:.1} s ({:.2} M records/s with generation), {} chunks, {} blocks flushed; {rounds} query rounds, {bad} mismatches against brute force",
        stats.records, start.elapsed().as_secs_f64(), stats.records as f64 / start.elapsed().as_secs_f64() / 1e6, stats.chunks, stats.blocks_flushed);
    if bad > 0 || rounds == 0 {
        return Err(format!("{bad} answers differ from brute force, {rounds} rounds").into());
    }
    Ok(())
}

/// Pushes generated records for `duration`, one progress line a second.
fn ingest(
    w: &mut loom::Writer,
    handles: &[loom::SourceHandle],
    duration: Duration,
) -> Result<(), loom::Error> {
    let start = Instant::now();
    let mut next_report = start + Duration::from_secs(1);
    let mut ks = [0u64; 3];
    let mut total = 0u64;
    let mut last_total = 0u64;
    while start.elapsed() < duration {
        for _ in 0..1000 {
            // Round-robin by virtual time so sources stay aligned.
            let s = (0..3)
                .min_by_key(|&i| gen(SOURCES[i].1, ks[i]).0)
                .unwrap_or(0);
            let sid = SOURCES[s].1;
            let (ts, lat) = gen(sid, ks[s]);
            w.push(handles[s], ts, &encode(sid, ks[s], ts, lat))?;
            ks[s] += 1;
        }
        total += 1000;
        w.sync();
        if Instant::now() >= next_report {
            println!(
                "ingest: {:.2} M records/s, {:.1} M records total, virtual time {:.1} s",
                (total - last_total) as f64 / 1e6,
                total as f64 / 1e6,
                gen(SOURCES[0].1, ks[0]).0 as f64 / 1e6
            );
            last_total = total;
            next_report += Duration::from_secs(1);
        }
    }
    Ok(())
}

/// One query round over [now − 8 s, now − 2 s] of the first source: max,
/// p99.99 and a range scan, each checked against brute force (mismatches
/// counted), then the range scan's count with the time index only. Returns
/// false when the store holds too little yet to ask.
fn ask(snap: &Snapshot, round: u32, mismatches: &AtomicU64) -> Result<bool, loom::Error> {
    let (name, idv) = SOURCES[0];
    let id = SourceId(idv);
    let Some(now) = snap.latest_timestamp(id) else {
        return Ok(false);
    };
    if now < WINDOW_FROM_S * 1_000_000 {
        return Ok(false);
    }
    let (t0, t1) = (
        now - WINDOW_FROM_S * 1_000_000,
        now - WINDOW_TO_S * 1_000_000,
    );
    let truth = brute(snap, id, 0x5a11, t0, t1);
    let mut sorted = truth.clone();
    sorted.sort_unstable();
    println!("query round {round}: {name}, virtual window [{:.1} s, {:.1} s], {} records in window, {} in store",
        t0 as f64 / 1e6, t1 as f64 / 1e6, truth.len(), snap.record_count(id));
    let t = Instant::now();
    let agg = snap.aggregate(id, t0, t1)?;
    let el = t.elapsed();
    let ok = agg.max == sorted.last().copied() && agg.count == truth.len() as u64;
    println!(
        "  max latency     {:>8} µs  Query Latency (max): {}  brute force {:?}: {}",
        agg.max.unwrap_or(0),
        ms(el),
        sorted.last(),
        check(ok)
    );
    mismatches.fetch_add(u64::from(!ok), Ordering::Relaxed);
    let t = Instant::now();
    let p = snap.percentile(id, t0, t1, 0.9999)?;
    let el = t.elapsed();
    let want = (!sorted.is_empty())
        .then(|| sorted[(loom::nearest_rank(0.9999, sorted.len() as u64) - 1) as usize]);
    println!(
        "  p99.99 latency  {:>8} µs  Query Latency (p99.99): {}  brute force {:?}: {}",
        p.unwrap_or(0),
        ms(el),
        want,
        check(p == want)
    );
    mismatches.fetch_add(u64::from(p != want), Ordering::Relaxed);
    let t = Instant::now();
    let mut slow = 0u64;
    let st = snap.range_scan(id, t0, t1, SLOW_US, u64::MAX, |_, _, _| slow += 1)?;
    let el = t.elapsed();
    let want = truth.iter().filter(|&&l| l >= SLOW_US).count() as u64;
    println!("  requests >= {SLOW_US} µs {:>6}     Query Latency (range scan): {}  ({} chunks read)  brute force {want}: {}", slow, ms(el), st.chunks_read, check(slow == want));
    mismatches.fetch_add(u64::from(slow != want), Ordering::Relaxed);
    let t = Instant::now();
    let none = snap.count_matching(id, t0, t1, SLOW_US, u64::MAX, IndexMode::TimeOnly)?;
    let el_time = t.elapsed();
    println!(
        "  same count with the time index only: {} in {} ({} chunks read)",
        none.count,
        ms(el_time),
        none.chunks_read
    );
    Ok(true)
}
