//! A child process ingests and persists now and then and is killed with
//! SIGKILL at a random moment; the store is reopened and every record that
//! was persisted (or sat in a flushed block) is there, each source's records
//! are an exact prefix of what was pushed, and queries over them are exact.
//! Rounds accumulate in one directory, so writing after a recovery is
//! covered too.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{record, spec, value_of, Model};
use loom::{Config, FlushMode, SourceId};

const SOURCES: u64 = 3;
const CHILD_ENV: &str = "LOOM_CRASH_CHILD_DIR";

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

/// The k-th record of source s: (timestamp, bytes).
fn nth(s: u64, k: u64) -> (u64, Vec<u8>) {
    let h = mix(s << 48 ^ k);
    (k * 2 + (h & 1), record(h % 2000, (h >> 20) as usize % 16))
}

fn config() -> Config {
    Config {
        chunk_size: 1024,
        block_size: 16384,
        segment_size: 16384 * 8,
        max_blocks_in_memory: 3,
        flush_mode: FlushMode::Direct,
        sync_data: false,
        max_index_lag: 64,
        sync_interval_ms: 1000,
        ..Config::default()
    }
}

/// The child's body: runs only when the parent test sets `CHILD_ENV`.
#[test]
fn crash_child_entry_point() -> Result<(), Box<dyn std::error::Error>> {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return Ok(());
    };
    let (mut w, _r) = loom::open(std::path::Path::new(&dir), config())?;
    let mut hs = Vec::new();
    let mut counts = Vec::new();
    let snap = w.reader().snapshot();
    for s in 0..SOURCES {
        counts.push(snap.record_count(SourceId(s)));
        hs.push(w.declare_source(SourceId(s), Some(spec()))?);
    }
    let mut out = std::io::stdout();
    writeln!(out, "started {counts:?}")?;
    let mut step: u64 = mix(counts.iter().sum::<u64>() + 7);
    for i in 0u64.. {
        step = mix(step);
        let s = (step % SOURCES) as usize;
        let (ts, b) = nth(s as u64, counts[s]);
        w.push(hs[s], ts, &b)?;
        counts[s] += 1;
        if i % 3000 == 2999 {
            w.persist()?;
            writeln!(out, "persisted {} {} {}", counts[0], counts[1], counts[2])?;
            out.flush()?;
        }
    }
    Ok(())
}

#[test]
fn killed_writer_loses_nothing_persisted() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let exe = std::env::current_exe()?;
    let mut persisted = [0u64; SOURCES as usize];
    let mut rng = mix(Instant::now().elapsed().as_nanos() as u64 ^ std::process::id() as u64);
    for round in 0..10 {
        let mut child = Command::new(&exe)
            .args([
                "crash_child_entry_point",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        rng = mix(rng);
        let wanted_persists = 1 + rng % 5;
        let mut seen = 0;
        while seen < wanted_persists {
            let Some(line) = lines.next() else { break };
            let line = line?;
            if let Some(rest) = line.strip_prefix("persisted ") {
                let v: Vec<u64> = rest.split(' ').filter_map(|x| x.parse().ok()).collect();
                for (p, n) in persisted.iter_mut().zip(v) {
                    *p = n;
                }
                seen += 1;
            }
        }
        std::thread::sleep(Duration::from_micros(rng % 20_000));
        child.kill()?;
        child.wait()?;
        assert!(seen > 0, "round {round}: the child never persisted");

        let (mut w, r) = loom::open(dir.path(), config())?;
        let mut model = Model::default();
        for s in 0..SOURCES {
            w.declare_source(SourceId(s), Some(spec()))?;
            let n = r.snapshot().record_count(SourceId(s));
            assert!(
                n >= persisted[s as usize],
                "round {round}: source {s} has {n} records, {} were persisted; recovery: {:?}",
                persisted[s as usize],
                w.dropped_tail()
            );
            for k in 0..n {
                let (ts, b) = nth(s, k);
                model.records.push((SourceId(s), ts, b));
            }
            let mut got = Vec::new();
            r.scan(SourceId(s), 0, u64::MAX, |t, b| got.push((t, b.to_vec())))?;
            assert_eq!(
                got,
                model.scan(SourceId(s), 0, u64::MAX),
                "round {round}: source {s} is not an exact prefix"
            );
        }
        let snap = r.snapshot();
        for s in 0..SOURCES {
            let id = SourceId(s);
            let top = snap.latest_timestamp(id).unwrap_or(0);
            for (t0, t1) in [(0, u64::MAX), (top / 3, top / 2), (top / 2, top)] {
                assert_eq!(snap.aggregate(id, t0, t1)?, model.aggregate(id, t0, t1));
                assert_eq!(
                    snap.percentile(id, t0, t1, 0.99)?,
                    model.percentile(id, t0, t1, 0.99)
                );
                let mut n = 0;
                snap.range_scan(id, t0, t1, 1500, 1999, |_, v, _| {
                    assert!((1500..=1999).contains(&v));
                    n += 1;
                })?;
                assert_eq!(n, model.range(id, t0, t1, 1500, 1999).len());
            }
        }
        assert!(model.records.iter().all(|(_, _, b)| value_of(b) < 2000));
        drop(snap);
        w.close()?;
    }
    Ok(())
}

/// A crash right after a persist into the last block of a segment leaves a
/// short segment file; the writer resumes in the next segment, and a later
/// recovery must read past the short file (this once lost data).
#[test]
fn resume_after_a_crash_in_the_last_block_of_a_segment() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cfg = config();
    let blocks_per_segment = cfg.segment_size / cfg.block_size as u64;
    let mut model = Model::default();
    let id = SourceId(0);
    let mut k = 0u64;
    {
        let (mut w, _r) = loom::open(dir.path(), cfg.clone())?;
        let h = w.declare_source(id, Some(spec()))?;
        // Fill until the writer is in the last block of segment 0.
        while w.stats().blocks_flushed < blocks_per_segment - 1 {
            let (ts, b) = nth(0, k);
            w.push(h, ts, &b)?;
            model.records.push((id, ts, b));
            k += 1;
        }
        for _ in 0..20 {
            let (ts, b) = nth(0, k);
            w.push(h, ts, &b)?;
            model.records.push((id, ts, b));
            k += 1;
        }
        w.persist()?;
        // Simulated crash: no close, no further flush.
        w.simulate_crash();
    }
    let seg0 = std::fs::metadata(dir.path().join("segment-00000000.log"))?.len();
    assert!(
        seg0 < cfg.segment_size,
        "segment 0 should be short, is {seg0} bytes"
    );
    {
        let (mut w, _r) = loom::open(dir.path(), cfg.clone())?;
        let h = w.declare_source(id, Some(spec()))?;
        for _ in 0..5000 {
            let (ts, b) = nth(0, k);
            w.push(h, ts, &b)?;
            model.records.push((id, ts, b));
            k += 1;
        }
        w.close()?;
    }
    let (mut w, r) = loom::open(dir.path(), cfg)?;
    w.declare_source(id, Some(spec()))?;
    assert!(w.dropped_tail().is_none(), "{:?}", w.dropped_tail());
    let mut got = Vec::new();
    r.scan(id, 0, u64::MAX, |t, b| got.push((t, b.to_vec())))?;
    assert_eq!(got.len(), model.records.len());
    assert_eq!(got, model.scan(id, 0, u64::MAX));
    Ok(())
}
