//! RocksDB (the system librocksdb), one shared DB, one writer per thread.
//!
//! Configuration: defaults of the library plus `create_if_missing`, WAL
//! disabled (telemetry tolerates losing the memtable on a crash, as Loom loses
//! its unflushed block), `increase_parallelism(threads + 1)` for background
//! flushes and compactions, and no block compression: every record repeats the
//! one benchmark payload, so compression would measure that artificial
//! redundancy (Loom, LMDB and the file store bytes as they come). Each writer thread puts [`BATCH_RECORDS`] records
//! per `WriteBatch`; a written batch is visible to readers, so "sync" writes
//! the partial batch. Keys: big-endian u64 with the thread id in the top
//! [`THREAD_BITS`] bits and the thread's sequence number below.

use super::{Sink, ValueBuf};
use anyhow::{Context, Result};
use rocksdb::{DBCompressionType, Options, WriteBatch, WriteOptions, DB};
use std::path::Path;

/// Records per write batch.
pub const BATCH_RECORDS: usize = 1000;

/// Bits of the key that hold the writer thread id.
pub const THREAD_BITS: u32 = 8;

/// Opens (creates) the database in `dir` for `threads` writers.
pub fn open(dir: &Path, threads: usize) -> Result<DB> {
    let mut options = Options::default();
    options.create_if_missing(true);
    options.increase_parallelism(i32::try_from(threads + 1).unwrap_or(i32::MAX));
    options.set_compression_type(DBCompressionType::None);
    DB::open(&options, dir).with_context(|| format!("opening RocksDB in {}", dir.display()))
}

/// One writer thread's batches.
pub struct RocksdbSink<'d> {
    db: &'d DB,
    write_options: WriteOptions,
    batch: WriteBatch,
    key_prefix: u64,
    seq: u64,
    value: ValueBuf,
}

impl<'d> RocksdbSink<'d> {
    /// Writer number `thread` (below 2^[`THREAD_BITS`]).
    pub fn new(db: &'d DB, thread: usize) -> Result<Self> {
        anyhow::ensure!(
            (thread as u64) < (1 << THREAD_BITS),
            "at most {} RocksDB writer threads",
            1u64 << THREAD_BITS
        );
        let mut write_options = WriteOptions::default();
        write_options.disable_wal(true);
        Ok(RocksdbSink {
            db,
            write_options,
            batch: WriteBatch::default(),
            key_prefix: (thread as u64) << (64 - THREAD_BITS),
            seq: 0,
            value: ValueBuf::new(),
        })
    }
}

impl Sink for RocksdbSink<'_> {
    #[inline]
    fn write(&mut self, ts_us: u64, payload: &[u8]) -> Result<()> {
        let key = (self.key_prefix | self.seq).to_be_bytes();
        self.batch.put(key, self.value.fill(ts_us, payload));
        self.seq += 1;
        if self.batch.len() >= BATCH_RECORDS {
            self.sync()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.db
                .write_opt(batch, &self.write_options)
                .context("RocksDB write batch")?;
        }
        Ok(())
    }
}
