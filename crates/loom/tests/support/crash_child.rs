//! Child process of `tests/crash.rs`: opens the store in the directory given
//! as its only argument, continues every source where recovery left it, and
//! pushes and persists until it is killed. After each persist it prints the
//! record counts that are now durable, which the parent checks after the kill.
//!
//! A test-support binary, not a tool: the test finds it through
//! `CARGO_BIN_EXE_loom-crash-child`.

#[path = "../common/mod.rs"]
mod common;
#[path = "crash_workload.rs"]
mod crash_workload;

use std::io::Write;
use std::path::PathBuf;

use common::spec;
use crash_workload::{config, mix, nth, PERSIST_EVERY, SOURCES};
use loom::SourceId;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .ok_or("usage: loom-crash-child <store directory>")?
        .into();
    let (mut w, _r) = loom::open(&dir, config())?;
    let mut hs = Vec::new();
    let mut counts = Vec::new();
    let snap = w.reader().snapshot();
    for s in 0..SOURCES {
        counts.push(snap.record_count(SourceId(s)));
        hs.push(w.declare_source(SourceId(s), Some(spec()))?);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "started {counts:?}")?;
    out.flush()?;
    let mut step: u64 = mix(counts.iter().sum::<u64>() + 7);
    for i in 0u64.. {
        step = mix(step);
        let s = (step % SOURCES) as usize;
        let (ts, b) = nth(s as u64, counts[s]);
        w.push(hs[s], ts, &b)?;
        counts[s] += 1;
        if i % PERSIST_EVERY == PERSIST_EVERY - 1 {
            w.persist()?;
            let line: Vec<String> = counts.iter().map(u64::to_string).collect();
            writeln!(out, "persisted {}", line.join(" "))?;
            out.flush()?;
        }
    }
    Ok(())
}
