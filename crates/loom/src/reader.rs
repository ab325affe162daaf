//! Reader handles: cheap to clone, usable from any thread.

use std::sync::Arc;

use crate::error::Result;
use crate::query::{Aggregate, CountResult, IndexMode, ScanStats};
use crate::snapshot::Shared;
use crate::snapshot::Snapshot;
use crate::source::{Extractor, RecordAddress, SourceId};

/// A handle for queries. Each call works on the newest synced snapshot; use
/// `snapshot()` to run several queries on the same records.
#[derive(Clone)]
pub struct Reader {
    shared: Arc<Shared>,
}

impl Reader {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Reader { shared }
    }

    /// The newest synced snapshot.
    pub fn snapshot(&self) -> Snapshot {
        // Data first, then summaries: summaries may cover chunks newer than
        // the data snapshot, never the reverse of what matters (unsummarised
        // chunks are scanned).
        let p = self.shared.snapshot.load_full();
        let ix = self.shared.index.load_full();
        Snapshot { p, ix }
    }

    /// The snapshot published by the writer's last `persist` (or by the
    /// open): every record in it is durable and survives a crash. Records
    /// in sealed chunks are read by log position ([`Snapshot::scan_log`]);
    /// the rest are in open chunks, durable in the journal of open chunks
    /// ([`Snapshot::scan_open_tail`]). Read-only stores: the same as
    /// [`Reader::snapshot`].
    pub fn durable_snapshot(&self) -> Snapshot {
        let p = self.shared.durable.load_full();
        let ix = self.shared.index.load_full();
        Snapshot { p, ix }
    }

    /// See [`Snapshot::aggregate`].
    pub fn aggregate(&self, id: SourceId, t0: u64, t1: u64) -> Result<Aggregate> {
        self.snapshot().aggregate(id, t0, t1)
    }

    /// See [`Snapshot::count`].
    pub fn count(&self, id: SourceId, t0: u64, t1: u64) -> Result<u64> {
        self.snapshot().count(id, t0, t1)
    }

    /// See [`Snapshot::aggregate_raw`].
    pub fn aggregate_raw(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        extractor: Extractor,
    ) -> Result<Aggregate> {
        self.snapshot().aggregate_raw(id, t0, t1, extractor)
    }

    /// See [`Snapshot::percentile`].
    pub fn percentile(&self, id: SourceId, t0: u64, t1: u64, q: f64) -> Result<Option<u64>> {
        self.snapshot().percentile(id, t0, t1, q)
    }

    /// See [`Snapshot::percentile_many`].
    pub fn percentile_many(
        &self,
        ids: &[SourceId],
        t0: u64,
        t1: u64,
        q: f64,
    ) -> Result<Option<u64>> {
        self.snapshot().percentile_many(ids, t0, t1, q)
    }

    /// See [`Snapshot::aggregate_many`].
    pub fn aggregate_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<Aggregate> {
        self.snapshot().aggregate_many(ids, t0, t1)
    }

    /// See [`Snapshot::aggregate_many_with`].
    pub fn aggregate_many_with(
        &self,
        ids: &[SourceId],
        t0: u64,
        t1: u64,
        extremes: crate::Extremes,
    ) -> Result<Aggregate> {
        self.snapshot().aggregate_many_with(ids, t0, t1, extremes)
    }

    /// See [`Snapshot::max_many`].
    pub fn max_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<Option<u64>> {
        self.snapshot().max_many(ids, t0, t1)
    }

    /// See [`Snapshot::min_many`].
    pub fn min_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<Option<u64>> {
        self.snapshot().min_many(ids, t0, t1)
    }

    /// See [`Snapshot::count_many`].
    pub fn count_many(&self, ids: &[SourceId], t0: u64, t1: u64) -> Result<u64> {
        self.snapshot().count_many(ids, t0, t1)
    }

    /// See [`Snapshot::range_scan`].
    pub fn range_scan(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        lo: u64,
        hi: u64,
        f: impl FnMut(u64, u64, &[u8]),
    ) -> Result<ScanStats> {
        self.snapshot().range_scan(id, t0, t1, lo, hi, f)
    }

    /// See [`Snapshot::scan`].
    pub fn scan(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        f: impl FnMut(u64, &[u8]),
    ) -> Result<ScanStats> {
        self.snapshot().scan(id, t0, t1, f)
    }

    /// See [`Snapshot::count_matching`].
    pub fn count_matching(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        lo: u64,
        hi: u64,
        mode: IndexMode,
    ) -> Result<CountResult> {
        self.snapshot().count_matching(id, t0, t1, lo, hi, mode)
    }

    /// See [`Snapshot::get`].
    pub fn get(&self, addr: RecordAddress) -> Result<Option<(u64, Vec<u8>)>> {
        self.snapshot().get(addr)
    }

    /// Timestamp of the source's newest synced record.
    pub fn latest_timestamp(&self, id: SourceId) -> Option<u64> {
        self.snapshot().latest_timestamp(id)
    }

    /// Ids of every source, sorted.
    pub fn sources(&self) -> Vec<SourceId> {
        self.snapshot().sources()
    }
}
