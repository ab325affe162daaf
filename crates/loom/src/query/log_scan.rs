//! Reading by log position: the records a source sealed into chunks between
//! two log addresses. Exporters resume from a position in the log, not from
//! a time, so records stored late (with older timestamps) are not skipped.
//! A source's open chunk (durable in the journal of open chunks once a
//! `persist` wrote it, but not sealed, so without a log address yet) is
//! read on its own: it becomes the source's first chunk sealed at or above
//! the snapshot's [`Snapshot::log_end`], its records first and in the same
//! order.

use crate::error::Result;
use crate::log::chunk::NO_CHUNK;
use crate::query::ScanStats;
use crate::snapshot::Snapshot;
use crate::source::SourceId;

impl Snapshot {
    /// A log position just past this snapshot's newest sealed chunk: every
    /// chunk sealed so far starts below it, every chunk sealed later at or
    /// above it (log addresses only grow, across restarts too). 0 for a
    /// store without chunks. Records in a source's unsealed tail are not
    /// below it; in a [`crate::Reader::durable_snapshot`] there are none.
    pub fn log_end(&self) -> u64 {
        self.p
            .sources
            .iter()
            .map(|s| s.newest_chunk)
            .filter(|&a| a != NO_CHUNK)
            .max()
            .map_or(0, |a| a + 1)
    }

    /// Log addresses below this were dropped by retention.
    pub fn retained_from(&self) -> u64 {
        self.p.retained_from
    }

    /// Calls `f(ts, bytes)`, in time order, for every record of source `id`
    /// in a sealed chunk whose log address is in `[from, to)`; chunks that
    /// retention dropped are skipped (see [`Snapshot::retained_from`]).
    /// Reads chunks through the same path as [`Snapshot::scan`].
    pub fn scan_log(
        &self,
        id: SourceId,
        from: u64,
        to: u64,
        mut f: impl FnMut(u64, &[u8]),
    ) -> Result<ScanStats> {
        let sv = self.view(id)?;
        let mut st = ScanStats::default();
        let mut n = 0u64;
        for i in self.log_chunks(id, from, to)? {
            let Some(c) = sv.dir.get(i)? else { break };
            st.chunks_read += 1;
            self.each_in_chunk(c.addr, 0, u64::MAX, |ts, bytes| {
                n += 1;
                f(ts, bytes);
            })?;
        }
        st.records_scanned = n;
        st.records_matched = n;
        Ok(st)
    }

    /// Records of source `id` pushed to its open chunk and not sealed yet
    /// (in a [`crate::Reader::durable_snapshot`]: the ones the journal of
    /// open chunks holds). 0 for an unknown source.
    pub fn open_tail_count(&self, id: SourceId) -> u64 {
        self.view(id).map_or(0, |sv| u64::from(sv.tail_count))
    }

    /// Calls `f(ts, bytes)`, in time order, for every record of source
    /// `id`'s open chunk (see [`Snapshot::open_tail_count`]). When the chunk
    /// seals, these records are the first of the source's first chunk at a
    /// log address at or above this snapshot's [`Snapshot::log_end`].
    pub fn scan_open_tail(&self, id: SourceId, f: impl FnMut(u64, &[u8])) -> Result<u64> {
        let sv = self.view(id)?;
        self.each_in_tail(sv, 0, u64::MAX, f)?;
        Ok(u64::from(sv.tail_count))
    }

    /// Records of source `id` in sealed chunks whose log address is in
    /// `[from, to)`, from the time index alone (no chunk is read); chunks
    /// retention dropped before this snapshot are not counted. 0 for an
    /// unknown source.
    pub fn count_log(&self, id: SourceId, from: u64, to: u64) -> u64 {
        let Ok(sv) = self.view(id) else { return 0 };
        match self
            .log_chunks(id, from, to)
            .and_then(|chunks| sv.dir.records_in(chunks))
        {
            Ok(n) => n,
            Err(e) => {
                // Only a paged-out directory can fail (its index file gone
                // or changed): the file's records are not there to count.
                log::error!("counting records of source {id}: {e}");
                0
            }
        }
    }

    /// Chunk numbers of a source's retained chunks with address in `[from, to)`.
    fn log_chunks(&self, id: SourceId, from: u64, to: u64) -> Result<std::ops::Range<usize>> {
        let Ok(sv) = self.view(id) else {
            return Ok(0..0);
        };
        let start = sv.dir.at_or_after(from)?;
        let end = sv.dir.at_or_after(to)?;
        Ok(start..end.max(start))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, SourceId};

    /// Every record of `snap` below `cuts`' last position, by range, plus
    /// the open chunks: (source, ts, bytes).
    fn read_all(snap: &crate::Snapshot, cuts: &[u64]) -> (Vec<(u64, u64, Vec<u8>)>, u64) {
        let mut seen = Vec::new();
        let mut counted = 0;
        for pair in cuts.windows(2) {
            for id in [SourceId(1), SourceId(2)] {
                let mut last = 0;
                snap.scan_log(id, pair[0], pair[1], |ts, bytes| {
                    assert!(ts >= last, "time order within a range");
                    last = ts;
                    seen.push((id.0, ts, bytes.to_vec()));
                })
                .unwrap();
                counted += snap.count_log(id, pair[0], pair[1]);
            }
        }
        for id in [SourceId(1), SourceId(2)] {
            let n = snap
                .scan_open_tail(id, |ts, bytes| seen.push((id.0, ts, bytes.to_vec())))
                .unwrap();
            assert_eq!(n, snap.open_tail_count(id));
            counted += n;
        }
        (seen, counted)
    }

    #[test]
    fn log_ranges_and_open_chunks_hold_every_record_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        // Chunks seal when full or at a persist 3 s of data after their
        // first record: some persists leave open chunks in the journal.
        let cfg = Config {
            chunk_size: 4096,
            seal_after_us: Some(3_000),
            ..Config::default()
        };
        let (mut w, r) = crate::open(dir.path(), cfg.clone()).unwrap();
        let a = w.declare_source(SourceId(1), None).unwrap();
        let b = w.declare_source(SourceId(2), None).unwrap();
        let mut cuts = vec![0u64];
        let mut pushed = 0u64;
        let mut open_seen = false;
        for round in 0..5u64 {
            for i in 0..1000u64 {
                let ts = round * 1_000 + i;
                w.push(a, ts, &ts.to_le_bytes()).unwrap();
                if i % 3 == 0 {
                    w.push(b, ts, &(ts + 1).to_le_bytes()).unwrap();
                    pushed += 1;
                }
                pushed += 1;
            }
            // Between persists, chunks are sealed but not durable: the
            // durable snapshot does not move.
            w.sync();
            assert_eq!(r.durable_snapshot().log_end(), *cuts.last().unwrap());
            w.persist().unwrap();
            let snap = r.durable_snapshot();
            open_seen |= snap.open_tail_count(SourceId(2)) > 0;
            cuts.push(snap.log_end());
        }
        assert!(open_seen, "some persist journaled an open chunk");
        let snap = r.durable_snapshot();
        let (mut seen, counted) = read_all(&snap, &cuts);
        assert_eq!(seen.len() as u64, pushed);
        assert_eq!(counted, pushed);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len() as u64, pushed, "no record twice");
        // The open chunks seal at close: after the reopen they are the
        // records at or above the last cut, the same records, once.
        let last = *cuts.last().unwrap();
        let mut tails = Vec::new();
        for id in [SourceId(1), SourceId(2)] {
            snap.scan_open_tail(id, |ts, bytes| tails.push((id.0, ts, bytes.to_vec())))
                .unwrap();
        }
        drop(snap);
        w.close().unwrap();
        let (mut w, r) = crate::open(dir.path(), cfg.clone()).unwrap();
        let snap = r.durable_snapshot();
        let mut sealed = Vec::new();
        for id in [SourceId(1), SourceId(2)] {
            assert_eq!(snap.open_tail_count(id), 0);
            snap.scan_log(id, last, u64::MAX, |ts, bytes| {
                sealed.push((id.0, ts, bytes.to_vec()))
            })
            .unwrap();
        }
        assert_eq!(sealed, tails);
        // A record pushed after the reopen lands at or after the new end.
        let end = snap.log_end();
        drop(snap);
        let a = w.handle_of(SourceId(1)).unwrap();
        w.push(a, 99_999, &7u64.to_le_bytes()).unwrap();
        w.persist().unwrap();
        let snap = r.durable_snapshot();
        let mut got = Vec::new();
        snap.scan_log(SourceId(1), end, u64::MAX, |ts, _| got.push(ts))
            .unwrap();
        snap.scan_open_tail(SourceId(1), |ts, _| got.push(ts))
            .unwrap();
        assert_eq!(got, vec![99_999]);
        assert_eq!(snap.count_log(SourceId(9), 0, u64::MAX), 0);
        assert_eq!(snap.open_tail_count(SourceId(9)), 0);
    }
}
