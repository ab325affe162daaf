//! LMDB (via `heed`, which builds the real LMDB C library), single writer.
//!
//! Configuration, chosen as a fair telemetry setup rather than a durable
//! database one: `WRITE_MAP` (write straight into the memory map) and
//! `NO_SYNC` (commit does not fsync; the kernel writes pages back, as Loom's
//! flusher writes blocks without waiting), a 64 GiB sparse map, keys = big-endian
//! sequence numbers put with `MDB_APPEND` (keys only grow, so pages fill
//! completely instead of splitting in half). A write transaction is committed,
//! which publishes it to readers, every [`COMMIT_EVERY`] records and at least
//! once a second.

use super::{Sink, ValueBuf};
use anyhow::{Context, Result};
use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, PutFlags, RwTxn};
use std::path::Path;

/// Map size: address space only (the file is sparse).
pub const MAP_SIZE: usize = 64 << 30;

/// Records per write transaction (a commit also happens at least once a second).
pub const COMMIT_EVERY: u64 = 10_000;

/// An open LMDB environment with the benchmark's one database.
pub struct LmdbStore {
    env: Env,
    db: Database<Bytes, Bytes>,
}

impl LmdbStore {
    /// Creates the environment in `dir` (which must exist).
    pub fn open(dir: &Path) -> Result<Self> {
        let mut options = EnvOpenOptions::new();
        options.map_size(MAP_SIZE).max_dbs(1);
        // SAFETY: NO_SYNC only weakens durability after an OS crash, which this
        // benchmark accepts; the environment is opened once in this process.
        let env = unsafe {
            options.flags(EnvFlags::NO_SYNC | EnvFlags::WRITE_MAP);
            options.open(dir)
        }
        .with_context(|| format!("opening LMDB environment in {}", dir.display()))?;
        let mut txn = env.write_txn().context("LMDB write txn")?;
        let db = env
            .create_database(&mut txn, Some("records"))
            .context("creating LMDB database")?;
        txn.commit().context("LMDB commit")?;
        Ok(LmdbStore { env, db })
    }

    /// A writer on this store.
    pub fn sink(&self) -> Result<LmdbSink<'_>> {
        Ok(LmdbSink {
            store: self,
            txn: Some(self.env.write_txn().context("LMDB write txn")?),
            in_txn: 0,
            seq: 0,
            value: ValueBuf::new(),
        })
    }

    /// Bytes of the map in use.
    pub fn used_bytes(&self) -> Result<u64> {
        self.env.non_free_pages_size().context("LMDB size")
    }
}

/// The single LMDB writer.
pub struct LmdbSink<'e> {
    store: &'e LmdbStore,
    txn: Option<RwTxn<'e>>,
    in_txn: u64,
    seq: u64,
    value: ValueBuf,
}

impl LmdbSink<'_> {
    fn commit(&mut self) -> Result<()> {
        if let Some(txn) = self.txn.take() {
            txn.commit().context("LMDB commit")?;
        }
        self.txn = Some(self.store.env.write_txn().context("LMDB write txn")?);
        self.in_txn = 0;
        Ok(())
    }
}

impl Sink for LmdbSink<'_> {
    #[inline]
    fn write(&mut self, ts_us: u64, payload: &[u8]) -> Result<()> {
        let key = self.seq.to_be_bytes();
        let value = self.value.fill(ts_us, payload);
        let txn = self
            .txn
            .as_mut()
            .context("LMDB write transaction lost after a failed commit")?;
        self.store
            .db
            .put_with_flags(txn, PutFlags::APPEND, &key, value)
            .context("LMDB put")?;
        self.seq += 1;
        self.in_txn += 1;
        if self.in_txn >= COMMIT_EVERY {
            self.commit()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.commit()
    }
}
