//! One timed run: open the store, write for the duration, report.

use crate::clock::MicrosClock;
use crate::meter::{DiskGuard, Meter, ProgressPrinter};
use crate::sink::file::FileSink;
use crate::sink::lmdb::LmdbStore;
use crate::sink::loom::LoomSink;
use crate::sink::rocksdb::RocksdbSink;
use crate::sink::{self, Sink};
use crate::summary::Summary;
use crate::values::Payloads;
use crate::{storage, STAMP_EVERY, SYNC_INTERVAL_US};
use anyhow::{bail, ensure, Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The store under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Db {
    /// The Loom engine (single writer).
    Loom,
    /// LMDB through heed (single writer).
    Lmdb,
    /// RocksDB, one writer per thread.
    Rocksdb,
    /// One raw file per thread.
    File,
}

impl Db {
    fn multi_writer(self) -> bool {
        matches!(self, Db::Rocksdb | Db::File)
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Store under test.
    pub db: Db,
    /// Payload bytes per record (at least 1).
    pub data_size: usize,
    /// Writer threads (only RocksDB and file take more than 1).
    pub threads: usize,
    /// How long to write.
    pub duration: Duration,
    /// Scratch directory, wiped before the run (see [`storage::prepare`]).
    pub storage_dir: PathBuf,
    /// Loom only: declare a range index on the source.
    pub index: bool,
    /// Keep the written data after the run instead of deleting it.
    pub keep_data: bool,
    /// Stop early when fewer bytes than this are free on the storage file system.
    pub reserve_bytes: u64,
}

impl RunConfig {
    /// Name printed as `db=` in the summary: the store, `loom-index` with an index.
    pub fn db_label(&self) -> &'static str {
        match (self.db, self.index) {
            (Db::Loom, true) => "loom-index",
            (Db::Loom, false) => "loom",
            (Db::Lmdb, _) => "lmdb",
            (Db::Rocksdb, _) => "rocksdb",
            (Db::File, _) => "file",
        }
    }

    fn validate(&self) -> Result<()> {
        ensure!(self.data_size >= 1, "--data-size must be at least 1 byte");
        ensure!(self.threads >= 1, "--threads must be at least 1");
        ensure!(
            self.threads == 1 || self.db.multi_writer(),
            "{:?} has a single writer: --threads must be 1",
            self.db
        );
        ensure!(
            !self.index || self.db == Db::Loom,
            "--index applies to --db loom only"
        );
        ensure!(!self.duration.is_zero(), "--duration-s must be at least 1");
        Ok(())
    }
}

/// Shared timing of a run's writer threads.
#[derive(Clone, Copy)]
struct Timing {
    clock: MicrosClock,
    end_us: u64,
}

/// The timed loop of one writer thread: stamp, write [`STAMP_EVERY`] records
/// (record `k` carrying [`Payloads::fill`]'s value `k`), publish at least
/// every [`SYNC_INTERVAL_US`], stop at the end time (or when the disk guard
/// asks), publish.
fn drive<S: Sink>(
    sink: &mut S,
    payloads: &Payloads,
    timing: Timing,
    meter: &Meter,
    thread: usize,
) -> Result<()> {
    let mut buf = payloads.buffer();
    let mut k = 0u64;
    let mut last_sync_us = timing.clock.now_us();
    loop {
        let now_us = timing.clock.now_us();
        if now_us >= timing.end_us || meter.stop_requested() {
            break;
        }
        if now_us.saturating_sub(last_sync_us) >= SYNC_INTERVAL_US {
            sink.sync()?;
            last_sync_us = now_us;
        }
        for _ in 0..STAMP_EVERY {
            payloads.fill(k, &mut buf);
            sink.write(now_us, &buf)?;
            k += 1;
        }
        meter.add(thread, STAMP_EVERY);
    }
    sink.sync()
}

/// Runs `threads` writers made by `make_sink(thread)` on scoped threads.
fn drive_threads<S, F>(
    threads: usize,
    make_sink: F,
    payloads: &Payloads,
    timing: Timing,
    meter: &Meter,
) -> Result<()>
where
    S: Sink,
    F: Fn(usize) -> Result<S> + Sync,
{
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let make_sink = &make_sink;
                std::thread::Builder::new()
                    .name(format!("writer-{t}"))
                    .spawn_scoped(scope, move || -> Result<()> {
                        let mut sink = make_sink(t)?;
                        drive(&mut sink, payloads, timing, meter, t)
                    })
                    .with_context(|| format!("spawning writer thread {t}"))
            })
            .collect::<Result<_>>()?;
        for (t, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(r) => r.with_context(|| format!("writer thread {t}"))?,
                Err(_) => bail!("writer thread {t} panicked"),
            }
        }
        Ok(())
    })
}

/// Loom, one writer: (seconds writing, seconds closing).
fn run_loom(
    cfg: &RunConfig,
    payloads: &Payloads,
    meter: &Arc<Meter>,
    start: impl Fn(&Arc<Meter>) -> Result<(Timing, ProgressPrinter)>,
) -> Result<(f64, f64)> {
    let mut sink = LoomSink::open(&cfg.storage_dir.join("loom"), cfg.index)?;
    let (timing, printer) = start(meter)?;
    drive(&mut sink, payloads, timing, meter, 0)?;
    let secs = timing.clock.now_us() as f64 / 1e6;
    drop(printer);
    let closing = Instant::now();
    let stats = sink.close()?;
    let close_s = closing.elapsed().as_secs_f64();
    eprintln!("[ingest-scaling] loom close took {close_s:.2}s; {stats}");
    Ok((secs, close_s))
}

/// LMDB, one writer: (seconds writing, seconds closing).
fn run_lmdb(
    cfg: &RunConfig,
    payloads: &Payloads,
    meter: &Arc<Meter>,
    start: impl Fn(&Arc<Meter>) -> Result<(Timing, ProgressPrinter)>,
) -> Result<(f64, f64)> {
    let lmdb_dir = cfg.storage_dir.join("lmdb");
    std::fs::create_dir_all(&lmdb_dir)
        .with_context(|| format!("creating {}", lmdb_dir.display()))?;
    let store = LmdbStore::open(&lmdb_dir)?;
    let mut sink = store.sink()?;
    let (timing, printer) = start(meter)?;
    drive(&mut sink, payloads, timing, meter, 0)?;
    let secs = timing.clock.now_us() as f64 / 1e6;
    drop(printer);
    let closing = Instant::now();
    drop(sink);
    let used = store.used_bytes()?;
    drop(store);
    let close_s = closing.elapsed().as_secs_f64();
    eprintln!("[ingest-scaling] lmdb map in use: {} MB", used / 1_000_000);
    Ok((secs, close_s))
}

/// Prepares the storage directory, writes for `cfg.duration`, and returns the
/// summary. Throughput counts from the first record until every writer's final
/// publish returned; closing the store afterwards (Loom: final persist with
/// fdatasync; LMDB: final commit and close, no sync; RocksDB: close, which
/// flushes the memtables to SST files; file: close) is timed and reported
/// beside it as `close_s`.
pub fn run(cfg: &RunConfig) -> Result<Summary> {
    cfg.validate()?;
    let dir = &cfg.storage_dir;
    storage::prepare(dir)?;
    let payloads = Payloads::new(cfg.data_size);
    let meter = Arc::new(Meter::new(cfg.threads));
    let label = format!(
        "db={} threads={} size={}",
        cfg.db_label(),
        cfg.threads,
        cfg.data_size
    );
    let duration_us = u64::try_from(cfg.duration.as_micros()).context("duration too long")?;

    // Open the store before the clock starts; start clock + progress together.
    let start = |meter: &Arc<Meter>| -> Result<(Timing, ProgressPrinter)> {
        let guard = DiskGuard {
            dir: dir.clone(),
            reserve_bytes: cfg.reserve_bytes,
        };
        let printer = ProgressPrinter::start(
            label.clone(),
            Arc::clone(meter),
            cfg.data_size as u64,
            guard,
        )
        .context("starting progress printer")?;
        let clock = MicrosClock::start();
        Ok((
            Timing {
                clock,
                end_us: duration_us,
            },
            printer,
        ))
    };

    let (secs, close_s) = match cfg.db {
        Db::Loom => run_loom(cfg, &payloads, &meter, start)?,
        Db::Lmdb => run_lmdb(cfg, &payloads, &meter, start)?,
        Db::Rocksdb => {
            let db = sink::rocksdb::open(&dir.join("rocksdb"), cfg.threads)?;
            let (timing, printer) = start(&meter)?;
            drive_threads(
                cfg.threads,
                |t| RocksdbSink::new(&db, t),
                &payloads,
                timing,
                &meter,
            )?;
            let secs = timing.clock.now_us() as f64 / 1e6;
            drop(printer);
            let closing = Instant::now();
            drop(db);
            (secs, closing.elapsed().as_secs_f64())
        }
        Db::File => {
            let (timing, printer) = start(&meter)?;
            // Each writer's file is flushed and closed at the end of its
            // thread, inside the timing: nothing is left to close here.
            drive_threads(
                cfg.threads,
                |t| FileSink::create(dir, t),
                &payloads,
                timing,
                &meter,
            )?;
            let secs = timing.clock.now_us() as f64 / 1e6;
            drop(printer);
            (secs, 0.0)
        }
    };
    // What each writer wrote, so a kept store can be checked against it
    // (tests/smoke.rs does); `figures/` reads only the stdout line.
    let per_thread: Vec<String> = meter.per_thread().iter().map(u64::to_string).collect();
    eprintln!(
        "[ingest-scaling] {label} written: records={} per_thread={}",
        meter.total(),
        per_thread.join(",")
    );
    if !cfg.keep_data {
        storage::clear(dir)?;
    }
    Ok(Summary::from_count(
        cfg.db_label(),
        cfg.threads,
        cfg.data_size,
        meter.total(),
        secs,
    )
    .with_close(close_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_threads_for_single_writer_stores() {
        let cfg = RunConfig {
            db: Db::Lmdb,
            data_size: 8,
            threads: 2,
            duration: Duration::from_secs(1),
            storage_dir: PathBuf::from("/nonexistent"),
            index: false,
            keep_data: false,
            reserve_bytes: 0,
        };
        assert!(run(&cfg).is_err());
    }
}
