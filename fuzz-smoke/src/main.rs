//! `fuzz-smoke`: runs every cargo-fuzz target's body on stable Rust.
//!
//! Inputs are valid samples made by the real encoders, mutated (bit flips,
//! boundary values in length fields, truncations, splices, inserted, deleted
//! and repeated ranges) and mostly re-sealed with correct checksums, plus
//! some random bytes. Each input runs under `catch_unwind`; a panic (also one
//! in a thread the body started) or an input slower than `--hang-ms` is
//! counted and its input saved to `--failures-dir` for replay with
//! `--replay FILE --targets NAME` (slow: more CPU time than `--hang-ms`). A watchdog ends the process (exit 3) with
//! the input saved when one input never returns.
//!
//! Prints per target
//! `fuzz-smoke target=<name> inputs=<n> inputs/s=<x> panics=<p> hangs=<h> slowest_ms=<m> seconds=<s>`
//! and exits 1 if any target had a panic or a hang.

mod influxql_samples;
mod mutate;
mod otlp_samples;
mod samples;
mod targets;

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;

use replay::SplitMix64;
use targets::Target;

/// Fuzz every decoder of outside bytes on stable Rust for a time budget.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Seconds per target.
    #[arg(long, default_value_t = 5.0)]
    budget_s: f64,
    /// Stop a target after this many inputs even if time is left.
    #[arg(long)]
    max_inputs: Option<u64>,
    /// Targets to run, comma separated [default: all].
    #[arg(long, value_delimiter = ',')]
    targets: Vec<String>,
    /// Seed of the input generator [default: from the clock; printed].
    #[arg(long)]
    seed: Option<u64>,
    /// An input using more CPU time than this counts as a hang (and is
    /// saved); one running over 10 times this (at least 10 s) of wall-clock
    /// time ends the run.
    #[arg(long, default_value_t = 2000)]
    hang_ms: u64,
    /// Where failing inputs are saved.
    #[arg(long, default_value = "tmp-data/fuzz-smoke")]
    failures_dir: PathBuf,
    /// Run one saved input through `--target` (panics show as usual).
    #[arg(long, requires = "targets")]
    replay: Option<PathBuf>,
}

/// Failing inputs saved (and reported one by one) per target.
const SAVED_PER_TARGET: u64 = 20;

/// Panics seen by the hook, from any thread, since the last check.
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static PANIC_COUNT: AtomicUsize = AtomicUsize::new(0);

/// What the watchdog needs to save an input that never returns.
struct Current {
    /// When the running input started, ns since `epoch`; 0 when idle.
    started_ns: AtomicU64,
    input: Mutex<(&'static str, Vec<u8>)>,
    epoch: Instant,
}

/// Per-target totals.
#[derive(Default)]
struct Tally {
    inputs: u64,
    panics: u64,
    hangs: u64,
    slowest: Duration,
    saved: u64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(file) = &args.replay {
        return replay(&args.targets, file);
    }
    let names: Vec<String> = if args.targets.is_empty() {
        targets::ALL.iter().map(|(n, _)| n.to_string()).collect()
    } else {
        args.targets.clone()
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    println!(
        "fuzz-smoke: seed={seed} budget_s={} per target, hang_ms={}",
        args.budget_s, args.hang_ms
    );
    std::fs::create_dir_all(&args.failures_dir)
        .with_context(|| format!("creating {}", args.failures_dir.display()))?;

    panic::set_hook(Box::new(|info| {
        let thread = std::thread::current().name().unwrap_or("?").to_string();
        if let Ok(mut p) = PANICS.lock() {
            p.push(format!("thread {thread}: {info}"));
        }
        PANIC_COUNT.fetch_add(1, Ordering::SeqCst);
    }));
    let current = Arc::new(Current {
        started_ns: AtomicU64::new(0),
        input: Mutex::new(("", Vec::new())),
        epoch: Instant::now(),
    });
    start_watchdog(
        Arc::clone(&current),
        args.failures_dir.clone(),
        Duration::from_millis(args.hang_ms.saturating_mul(10).max(10_000)),
    );

    let mut rng = SplitMix64::new(seed);
    let (mut panics, mut hangs) = (0, 0);
    for name in &names {
        let Some(&(name, format)) = targets::ALL.iter().find(|(n, _)| n == name) else {
            bail!(
                "unknown target {name}; known: {:?}",
                targets::ALL.map(|t| t.0)
            );
        };
        let target = Target::new(name, format, &mut rng)
            .with_context(|| format!("making samples for {name}"))?;
        let start = Instant::now();
        let tally = fuzz(&target, &mut rng, &args, &current)?;
        let secs = start.elapsed().as_secs_f64();
        println!(
            "fuzz-smoke target={name} inputs={} inputs/s={:.0} panics={} hangs={} slowest_ms={} seconds={secs:.1}",
            tally.inputs,
            tally.inputs as f64 / secs.max(1e-9),
            tally.panics,
            tally.hangs,
            tally.slowest.as_millis(),
        );
        panics += tally.panics;
        hangs += tally.hangs;
    }
    println!(
        "fuzz-smoke: {} targets, {panics} panics, {hangs} hangs; failing inputs in {}",
        names.len(),
        args.failures_dir.display()
    );
    if panics + hangs > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// Runs one target until its budget is spent.
fn fuzz(target: &Target, rng: &mut SplitMix64, args: &Args, current: &Current) -> Result<Tally> {
    let budget = Duration::from_secs_f64(args.budget_s.max(0.0));
    let max_inputs = args.max_inputs.unwrap_or(u64::MAX);
    let hang = Duration::from_millis(args.hang_ms);
    let start = Instant::now();
    let mut t = Tally::default();
    let mut input = Vec::new();
    while t.inputs < max_inputs && (t.inputs % 64 != 0 || start.elapsed() < budget) {
        target.next_input(rng, &mut input);
        {
            let mut slot = current
                .input
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?;
            slot.0 = target.name;
            slot.1.clear();
            slot.1.extend_from_slice(&input);
        }
        current.started_ns.store(
            current.epoch.elapsed().as_nanos() as u64 | 1,
            Ordering::SeqCst,
        );
        let began = Instant::now();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| target.run(&input)));
        let wall = began.elapsed();
        t.inputs += 1;
        t.slowest = t.slowest.max(wall);
        // Wall-clock time is cheap to read but grows while a loaded machine
        // runs other processes: an input slow by it runs again, timed by the
        // CPU time it uses (a syscall, too dear for every input).
        let took = if wall > hang {
            let cpu_before = process_cpu_time();
            let _ = panic::catch_unwind(AssertUnwindSafe(|| target.run(&input)));
            process_cpu_time().saturating_sub(cpu_before)
        } else {
            wall
        };
        current.started_ns.store(0, Ordering::SeqCst);
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("{}: scratch directory: {e}", target.name),
            Err(_) => {}
        }
        if PANIC_COUNT.swap(0, Ordering::SeqCst) > 0 {
            t.panics += 1;
            let messages = PANICS
                .lock()
                .map(|mut p| p.split_off(0))
                .unwrap_or_default();
            if let Some(file) = save(&args.failures_dir, target.name, "panic", &input, &mut t)? {
                println!(
                    "fuzz-smoke target={} PANIC input={} ({} bytes): {}",
                    target.name,
                    file.display(),
                    input.len(),
                    messages.join(" | ").replace('\n', " ")
                );
            }
        }
        if took > hang {
            t.hangs += 1;
            if let Some(file) = save(&args.failures_dir, target.name, "slow", &input, &mut t)? {
                println!(
                    "fuzz-smoke target={} HANG input={} used {} ms of CPU",
                    target.name,
                    file.display(),
                    took.as_millis()
                );
            }
        }
    }
    Ok(t)
}

/// CPU time used by the whole process so far (every thread: the segment
/// target's work runs partly in the engine's threads). Unlike wall-clock
/// time it does not grow while a loaded machine runs other processes, so a
/// slow input means work, not waiting; an input that waits forever is the
/// watchdog's.
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Saves a failing input and returns its path; after the first
/// `SAVED_PER_TARGET` of a target only counts it (`None`).
fn save(
    dir: &Path,
    name: &str,
    what: &str,
    input: &[u8],
    t: &mut Tally,
) -> Result<Option<PathBuf>> {
    if t.saved >= SAVED_PER_TARGET {
        return Ok(None);
    }
    let file = dir.join(format!("{name}-{what}-{}.bin", t.inputs));
    std::fs::write(&file, input).with_context(|| format!("saving {}", file.display()))?;
    t.saved += 1;
    Ok(Some(file))
}

/// Ends the process, input saved, when one input runs longer than `limit`.
fn start_watchdog(current: Arc<Current>, dir: PathBuf, limit: Duration) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(200));
        let started = current.started_ns.load(Ordering::SeqCst);
        if started == 0 {
            continue;
        }
        let now = current.epoch.elapsed().as_nanos() as u64;
        if now.saturating_sub(started) < limit.as_nanos() as u64 {
            continue;
        }
        let (name, input) = match current.input.lock() {
            Ok(slot) => (slot.0, slot.1.clone()),
            Err(_) => ("unknown", Vec::new()),
        };
        let file = dir.join(format!("{name}-stuck.bin"));
        let saved = std::fs::write(&file, &input).is_ok();
        println!(
            "fuzz-smoke target={name} HANG: one input has run over {} s; saved={saved} input={}",
            limit.as_secs(),
            file.display()
        );
        std::process::exit(3);
    });
}

/// Runs a saved input once through the named target.
fn replay(names: &[String], file: &Path) -> Result<()> {
    let [name] = names else {
        bail!("--replay takes exactly one --targets name");
    };
    let Some(format) = targets::by_name(name) else {
        bail!("unknown target {name}");
    };
    let input = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let scratch = tempfile::tempdir().context("scratch directory")?;
    targets::run_body(format, scratch.path(), &input)?;
    println!(
        "fuzz-smoke: {name} ran {} ({} bytes) without a panic",
        file.display(),
        input.len()
    );
    Ok(())
}
