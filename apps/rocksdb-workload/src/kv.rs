//! The RocksDB databases and the worker threads that load them.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use replay::SplitMix64;
use rocksdb::{Options, WriteOptions, DB};
use telemetry::{KvOp, KvOpKind, Record};

use crate::{WorkloadConfig, WorkloadError};
use workload::{gettid, monotonic_ns, RecordBuffer, Shared};

/// Worker threads add their operation count to the shared total this often.
const OPS_FLUSH_EVERY: u64 = 64;
/// Hot keys are loaded in write batches of this many keys.
const LOAD_BATCH: u64 = 10_000;

/// Opens database `index` under `root`, removing what a previous run left.
pub fn open_instance(root: &Path, index: usize) -> Result<DB, WorkloadError> {
    let path: PathBuf = root.join(format!("instance-{index}"));
    if path.exists() {
        std::fs::remove_dir_all(&path)
            .map_err(WorkloadError::io(format!("removing {}", path.display())))?;
    }
    std::fs::create_dir_all(&path)
        .map_err(WorkloadError::io(format!("creating {}", path.display())))?;
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_max_background_jobs(2);
    DB::open(&opts, &path).map_err(|source| WorkloadError::RocksDb {
        path: path.display().to_string(),
        source,
    })
}

fn key(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// Writes every hot key once and flushes, so reads go through SST files.
pub fn load_hot_keys(db: &DB, config: &WorkloadConfig) -> Result<(), WorkloadError> {
    let err = |source| WorkloadError::RocksDb {
        path: db.path().display().to_string(),
        source,
    };
    let value = vec![0xabu8; config.value_size];
    let mut start = 0;
    while start < config.hot_keys {
        let end = (start + LOAD_BATCH).min(config.hot_keys);
        let mut batch = rocksdb::WriteBatch::default();
        for k in start..end {
            batch.put(key(k), &value);
        }
        db.write(batch).map_err(err)?;
        start = end;
    }
    db.flush().map_err(err)
}

/// One worker: reads hot keys and writes anywhere until `shared.stop`,
/// turning every operation into a KV op record once telemetry is on.
/// Returns the first RocksDB error.
pub fn run_worker(
    db: Arc<DB>,
    config: Arc<WorkloadConfig>,
    seed: u64,
    shared: Arc<Shared>,
    mut buffer: RecordBuffer,
) -> Result<(), WorkloadError> {
    let tid = gettid();
    let mut rng = SplitMix64::new(seed);
    let mut value = vec![0u8; config.value_size];
    let mut write_opts = WriteOptions::default();
    write_opts.disable_wal(false);
    let (mut local_ops, mut recorded) = (0u64, 0u64);
    let err = |source| WorkloadError::RocksDb {
        path: db.path().display().to_string(),
        source,
    };
    while !shared.stop.load(Ordering::Relaxed) {
        let read = rng.uniform() < config.read_ratio;
        let start_ns = monotonic_ns();
        let t0 = Instant::now();
        if read {
            let k = rng.below(config.hot_keys);
            db.get_pinned(key(k)).map_err(err)?;
        } else {
            let k = rng.below(config.key_space);
            let stamp = rng.next_u64().to_le_bytes();
            let n = stamp.len().min(value.len());
            value[..n].copy_from_slice(&stamp[..n]);
            db.put_opt(key(k), &value, &write_opts).map_err(err)?;
        }
        let duration_us = t0.elapsed().as_micros() as u64;
        if let Some(epoch_ns) = shared.epoch_if_on() {
            recorded += 1;
            buffer.push(Record::KvOp(KvOp {
                thread_id: tid,
                op: if read {
                    KvOpKind::Read
                } else {
                    KvOpKind::Write
                },
                start_us: start_ns.saturating_sub(epoch_ns) / 1000,
                duration_us,
            }));
        }
        local_ops += 1;
        if local_ops == OPS_FLUSH_EVERY {
            shared.ops.fetch_add(local_ops, Ordering::Relaxed);
            shared.recorded.fetch_add(recorded, Ordering::Relaxed);
            (local_ops, recorded) = (0, 0);
        }
    }
    shared.ops.fetch_add(local_ops, Ordering::Relaxed);
    shared.recorded.fetch_add(recorded, Ordering::Relaxed);
    buffer.flush();
    Ok(())
}
