//! A child process (`loom-crash-child`, `tests/support/crash_child.rs`)
//! ingests and persists now and then and is killed with SIGKILL at a random
//! moment; the store is reopened and every record that was persisted (or sat
//! in a flushed block) is there, each source's records are an exact prefix of
//! what was pushed, and queries over them are exact. Rounds accumulate in one
//! directory, so writing after a recovery is covered too.
//!
//! The kill points come from a seed printed at the start (run with
//! `--nocapture` to see it) and in every failure message. `LOOM_CRASH_SEED=<n>`
//! replays the same kill points (how many persists to wait for, then how long
//! to sleep before the kill; the child's speed still varies from run to run),
//! and `LOOM_CRASH_ROUNDS=<n>` changes the number of kills (default
//! `DEFAULT_ROUNDS`).

mod common;
#[path = "support/crash_workload.rs"]
mod crash_workload;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{spec, value_of, Model};
use crash_workload::{config, mix, nth, SOURCES};
use loom::SourceId;

/// Kill points per run when `LOOM_CRASH_ROUNDS` is not set.
const DEFAULT_ROUNDS: u64 = 50;

/// A number from the environment, or `default` when the variable is unset.
fn env_u64(name: &str, default: impl FnOnce() -> u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a number: {e}")),
        Err(_) => default(),
    }
}

#[test]
fn killed_writer_loses_nothing_persisted() -> Result<(), Box<dyn std::error::Error>> {
    let seed = env_u64("LOOM_CRASH_SEED", || {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        mix(now ^ u64::from(std::process::id()))
    });
    let rounds = env_u64("LOOM_CRASH_ROUNDS", || DEFAULT_ROUNDS);
    let replay = format!("seed {seed}; replay with LOOM_CRASH_SEED={seed}");
    eprintln!("crash test: {rounds} kill points, {replay}");
    // LOOM_CRASH_DIR keeps the store for a post-mortem; by default it is a
    // temporary directory.
    let temp = tempfile::tempdir()?;
    let kept = std::env::var_os("LOOM_CRASH_DIR").map(std::path::PathBuf::from);
    let dir_path = kept.unwrap_or_else(|| temp.path().to_path_buf());
    let exe = env!("CARGO_BIN_EXE_loom-crash-child");
    let mut persisted = [0u64; SOURCES as usize];
    let mut rng = seed;
    for round in 0..rounds {
        let mut child = Command::new(exe)
            .arg(&dir_path)
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
        assert!(
            seen > 0,
            "round {round}: the child never persisted; {replay}"
        );

        check_recovered(&dir_path, &persisted, round, &replay)?;
    }
    Ok(())
}

/// Reopens the store after a kill and checks it against what the child
/// pushed: at least every persisted record, each source an exact prefix,
/// queries exact. Errors name the round, the recovery report and the seed.
fn check_recovered(
    dir: &std::path::Path,
    persisted: &[u64],
    round: u64,
    replay: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let (mut w, r) = loom::open(dir, config())?;
    let recovery = format!("{:?}", w.recovery());
    let checked = (|| -> Result<(), Box<dyn std::error::Error>> {
        let mut model = Model::default();
        for s in 0..SOURCES {
            w.declare_source(SourceId(s), Some(spec()))?;
            let n = r.snapshot().record_count(SourceId(s));
            assert!(
                n >= persisted[s as usize],
                "round {round}: source {s} has {n} records, {} were persisted; recovery: {recovery}; {replay}",
                persisted[s as usize],
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
                "round {round}: source {s} is not an exact prefix; {replay}"
            );
        }
        let snap = r.snapshot();
        for s in 0..SOURCES {
            let id = SourceId(s);
            let top = snap.latest_timestamp(id).unwrap_or(0);
            for (t0, t1) in [(0, u64::MAX), (top / 3, top / 2), (top / 2, top)] {
                let at = format!("round {round}: source {s} window {t0}..{t1}; {replay}");
                assert_eq!(
                    snap.aggregate(id, t0, t1)?,
                    model.aggregate(id, t0, t1),
                    "{at}"
                );
                assert_eq!(
                    snap.percentile(id, t0, t1, 0.99)?,
                    model.percentile(id, t0, t1, 0.99),
                    "{at}"
                );
                let mut n = 0;
                snap.range_scan(id, t0, t1, 1500, 1999, |_, v, _| {
                    assert!((1500..=1999).contains(&v));
                    n += 1;
                })?;
                assert_eq!(n, model.range(id, t0, t1, 1500, 1999).len(), "{at}");
            }
        }
        assert!(model.records.iter().all(|(_, _, b)| value_of(b) < 2000));
        drop(snap);
        Ok(())
    })();
    checked.map_err(|e| format!("round {round}: {e}; recovery: {recovery}; {replay}"))?;
    w.close()?;
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
