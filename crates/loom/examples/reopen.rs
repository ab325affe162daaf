//! Reopen benchmark: writes a store of KV-like records (24 bytes, a
//! range index on a duration field, several sources), ends it cleanly or
//! with a simulated crash, then times the reopen and says where the time
//! went.
//!
//! `cargo run --release -p loom --example reopen -- --dir tmp-data/reopen --records 50000000 [--crash] [--reopen-only] [--index-cache-bytes N] [--segment-mib 256]`
//!
//! After the reopen it reports the process's RSS and the store's index
//! memory, and times a P1-style question (max and p99.99 of one source's
//! durations) over a fortieth of the store's time span among its oldest
//! data, first with its summaries paged out (read back from the segment
//! index files) then again with them cached (`make index-paging`).

use std::path::PathBuf;
use std::time::Instant;

use loom::{FieldDef, FieldType, IndexDef, SourceId, SourceSchema};

fn schema(op: u64) -> SourceSchema {
    SourceSchema {
        measurement: "kv".into(),
        tags: vec![("op".into(), format!("op{op}"))],
        fields: vec![
            FieldDef {
                name: "start_us".into(),
                offset: 8,
                ty: FieldType::U64,
            },
            FieldDef {
                name: "duration_us".into(),
                offset: 16,
                ty: FieldType::U64,
            },
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
    dir: PathBuf,
    records: u64,
    crash: bool,
    reopen_only: bool,
    index_cache_bytes: usize,
    segment_mib: u64,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::from("tmp-data/reopen"),
        records: 50_000_000,
        crash: false,
        reopen_only: false,
        index_cache_bytes: loom::Config::default().index_cache_bytes,
        segment_mib: loom::Config::default().segment_size >> 20,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--dir" => a.dir = it.next().ok_or("--dir needs a path")?.into(),
            "--records" => {
                a.records = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--records needs a number")?
            }
            "--index-cache-bytes" => {
                a.index_cache_bytes = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--index-cache-bytes needs a number")?
            }
            "--segment-mib" => {
                a.segment_mib = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--segment-mib needs a number (a multiple of 16)")?
            }
            "--crash" => a.crash = true,
            "--reopen-only" => a.reopen_only = true,
            other => {
                return Err(format!(
                    "unknown flag {other}; flags: --dir, --records, --crash, --reopen-only, --index-cache-bytes, --segment-mib"
                ))
            }
        }
    }
    Ok(a)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let a = args()?;
    if !a.reopen_only {
        write(&a)?;
    }
    reopen(&a)
}

fn write(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let _ = std::fs::remove_dir_all(&a.dir);
    let t = Instant::now();
    let config = loom::Config {
        segment_size: a.segment_mib << 20,
        index_cache_bytes: a.index_cache_bytes,
        ..loom::Config::default()
    };
    let (mut w, _r) = loom::open(&a.dir, config)?;
    let hs: Vec<_> = (0..4u64)
        .map(|op| w.declare(SourceId(op + 1), schema(op)))
        .collect::<Result<_, _>>()?;
    let mut rec = [0u8; 24];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..a.records {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let duration = if x.is_multiple_of(1000) {
            x % 50_000
        } else {
            x % 300
        };
        rec[8..16].copy_from_slice(&(i / 8).to_le_bytes());
        rec[16..24].copy_from_slice(&duration.to_le_bytes());
        w.push(hs[(x % 4) as usize], i / 8, &rec)?;
        if i % 10_000_000 == 0 {
            w.persist()?;
        }
    }
    w.persist()?;
    w.wait_for_index()?;
    let written = t.elapsed();
    let bytes = w.bytes_on_disk();
    if a.crash {
        w.simulate_crash();
    } else {
        w.close()?;
    }
    println!(
        "wrote {} records ({} MB on disk) in {:.1} s, ended with {}",
        a.records,
        bytes / 1_000_000,
        written.as_secs_f64(),
        if a.crash {
            "a simulated crash"
        } else {
            "close"
        }
    );
    Ok(())
}

/// The process's resident set, MB (`VmRSS` of /proc/self/status).
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn index_line(r: &loom::Reader) -> String {
    let m = r.snapshot().index_memory();
    format!(
        "index memory {:.1} MB (summaries {:.1} MB, cache {:.1} MB in {} pages of budget {:.1} MB, directory {:.1} MB + {:.1} MB paged back in; {} summary page loads, {} directory page loads)",
        m.held_bytes() as f64 / 1e6,
        m.summaries_bytes as f64 / 1e6,
        m.cache_bytes as f64 / 1e6,
        m.cache_pages,
        m.cache_budget as f64 / 1e6,
        m.directory_bytes as f64 / 1e6,
        m.directory_cache_bytes as f64 / 1e6,
        m.page_loads,
        m.directory_page_loads
    )
}

/// A P1-style question (max and p99.99 of one source) over a fortieth of
/// the store's time span, starting a tenth in (old data: its summaries are
/// paged out): ms and answer.
/// The answer of the P1-style question: max and p99.99.
type P1Answer = (Option<u64>, Option<u64>);

fn p1(r: &loom::Reader) -> Result<(f64, P1Answer), loom::Error> {
    let (t0, t1) = r
        .snapshot()
        .time_span(SourceId(1))
        .map_or((0, 0), |(a, b)| {
            (a + (b - a) / 10, a + (b - a) / 10 + (b - a) / 40)
        });
    let q = Instant::now();
    let max = r.aggregate(SourceId(1), t0, t1)?.max;
    let p = r.percentile(SourceId(1), t0, t1, 0.9999)?;
    Ok((q.elapsed().as_secs_f64() * 1e3, (max, p)))
}

fn reopen(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let config = loom::Config {
        index_cache_bytes: a.index_cache_bytes,
        ..loom::Config::default()
    };
    let rss_before = rss_mb();
    let t = Instant::now();
    let (mut w, r) = loom::open(&a.dir, config)?;
    let opened = t.elapsed();
    let rss_open = rss_mb();
    let rep = w.recovery().clone();
    println!(
        "index-cache-bytes {}: RSS after open {rss_open:.1} MB ({rss_before:.1} MB before); {}",
        a.index_cache_bytes,
        index_line(&r)
    );
    let (cold, answer) = p1(&r)?;
    let mut warm: Vec<f64> = Vec::new();
    for _ in 0..7 {
        let (ms, again) = p1(&r)?;
        if again != answer {
            return Err(format!("P1 answered {again:?} then {answer:?}").into());
        }
        warm.push(ms);
    }
    warm.sort_by(f64::total_cmp);
    let rss_p1 = rss_mb();
    println!(
        "P1 (max, p99.99 of source 1 over a fortieth of the span, a tenth in): first {cold:.1} ms, then median {:.1} ms = {answer:?}; RSS {rss_p1:.1} MB; {}",
        warm[warm.len() / 2],
        index_line(&r)
    );
    let q = Instant::now();
    let p = r.percentile(SourceId(1), 0, u64::MAX, 0.9999)?;
    let first_query = q.elapsed();
    let idx = Instant::now();
    w.wait_for_index()?;
    let reindexed = idx.elapsed();
    println!(
        "reopen: {:.0} ms total; recovery {:.0} ms ({} segments from their index, {} scanned, {} MB read), the rest {:.0} ms (directories, catalog, threads)",
        opened.as_secs_f64() * 1e3,
        rep.millis,
        rep.segments_from_index,
        rep.segments_scanned,
        rep.bytes_scanned / 1_000_000,
        opened.as_secs_f64() * 1e3 - rep.millis
    );
    println!(
        "recovered {} records in {} chunks; {} chunks re-indexed in the background ({:.0} ms); first query (p99.99 over everything of one source) {:.0} ms = {p:?}",
        rep.records,
        rep.chunks,
        w.stats().chunks_reindexed,
        reindexed.as_secs_f64() * 1e3,
        first_query.as_secs_f64() * 1e3
    );
    let rss = rss_mb();
    println!("after every query: RSS {rss:.1} MB; {}", index_line(&r));
    // The bound the paged index is held to: the index budget plus 64 MB
    // for everything else, once the P1 questions read paged summaries;
    // after the question over everything the chunk cache (its own budget,
    // `Config::chunk_cache_bytes`) holds chunks read too.
    let mb = |b: usize| b as f64 / (1 << 20) as f64;
    let bound = mb(a.index_cache_bytes) + 64.0;
    let chunk_cache = mb(loom::Config::default().chunk_cache_bytes);
    println!(
        "RSS-CHECK index_cache_mb={:.1} after_open_mb={rss_open:.1} after_p1_mb={rss_p1:.1} bound_mb={bound:.1} within={}; after_all_mb={rss:.1} bound_with_chunk_cache_mb={:.1} within={}",
        mb(a.index_cache_bytes),
        rss_open.max(rss_p1) <= bound,
        bound + chunk_cache,
        rss <= bound + chunk_cache
    );
    w.close()?;
    Ok(())
}
