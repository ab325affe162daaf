//! Reopen benchmark: writes a store of KV-like records (24 bytes, a
//! range index on a duration field, several sources), ends it cleanly or
//! with a simulated crash, then times the reopen and says where the time
//! went.
//!
//! `cargo run --release -p loom --example reopen -- --dir tmp-data/reopen --records 50000000 [--crash] [--reopen-only]`

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
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::from("tmp-data/reopen"),
        records: 50_000_000,
        crash: false,
        reopen_only: false,
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
            "--crash" => a.crash = true,
            "--reopen-only" => a.reopen_only = true,
            other => {
                return Err(format!(
                    "unknown flag {other}; flags: --dir, --records, --crash, --reopen-only"
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
    let (mut w, _r) = loom::open(&a.dir, loom::Config::default())?;
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

fn reopen(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let (mut w, r) = loom::open(&a.dir, loom::Config::default())?;
    let opened = t.elapsed();
    let rep = w.recovery().clone();
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
    w.close()?;
    Ok(())
}
