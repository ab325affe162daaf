//! Child process of `tests/index_rss.rs`, so the memory it measures is one
//! process's alone. `loom-rss-child write DIR` writes the store and prints
//! the index memory a writer with the default budget holds for it;
//! `loom-rss-child reopen DIR` reopens it with a small index budget, asks
//! every window of `rss_workload::windows` of every source, and prints the
//! answers and its peak resident set.
//!
//! A test-support binary, not a tool: the test finds it through
//! `CARGO_BIN_EXE_loom-rss-child`.

#[path = "../common/mod.rs"]
mod common;
#[path = "rss_workload.rs"]
mod rss_workload;

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use loom::SourceId;
use rss_workload::{
    bytes, nth, read_config, schema, windows, write_config, PERSIST_EVERY, Q, RECORDS, SOURCES,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: loom-rss-child write|reopen <store directory>";
    let mode = args.next().ok_or(usage)?;
    let dir = args.next().ok_or(usage)?;
    match mode.as_str() {
        "write" => write(Path::new(&dir)),
        "reopen" => reopen(Path::new(&dir)),
        _ => Err(usage.into()),
    }
}

fn write(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let (mut w, r) = loom::open(dir, write_config())?;
    let hs: Vec<_> = (0..SOURCES)
        .map(|s| w.declare(SourceId(s), schema(s)))
        .collect::<Result<_, _>>()?;
    for i in 0..RECORDS {
        let (s, t, v) = nth(i);
        w.push(hs[s.0 as usize], t, &bytes(v))?;
        if i % PERSIST_EVERY == PERSIST_EVERY - 1 {
            w.persist()?;
        }
    }
    w.persist()?;
    w.wait_for_index()?;
    let m = r.snapshot().index_memory();
    println!(
        "written summaries={} directory={} disk={}",
        m.summaries_bytes + m.cache_bytes,
        m.directory_bytes + m.directory_cache_bytes,
        w.bytes_on_disk()
    );
    w.close()?;
    Ok(())
}

fn reopen(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let (w, r) = loom::open(dir, read_config())?;
    let opened_ms = t.elapsed().as_millis();
    let mut out = std::io::stdout().lock();
    for (t0, t1) in windows() {
        for s in 0..SOURCES {
            let a = r.aggregate(SourceId(s), t0, t1)?;
            let p = r.percentile(SourceId(s), t0, t1, Q)?;
            writeln!(
                out,
                "answer {s} {t0} {t1} {} {} {}",
                a.count,
                a.max.map_or("-".into(), |v| v.to_string()),
                p.map_or("-".into(), |v| v.to_string())
            )?;
        }
    }
    let m = r.snapshot().index_memory();
    writeln!(
        out,
        "memory hwm_kb={} rss_kb={} held={} page_loads={} directory_page_loads={} reindexed={} opened_ms={opened_ms}",
        status_kb("VmHWM:").ok_or("no VmHWM in /proc/self/status")?,
        status_kb("VmRSS:").ok_or("no VmRSS in /proc/self/status")?,
        m.held_bytes(),
        m.page_loads,
        m.directory_page_loads,
        w.stats().chunks_reindexed
    )?;
    drop(r);
    w.close()?;
    Ok(())
}

/// A `kB` line of `/proc/self/status`.
fn status_kb(key: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
