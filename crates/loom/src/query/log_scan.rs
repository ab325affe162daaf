//! Reading by log position: the records a source sealed into chunks between
//! two log addresses. Exporters resume from a position in the log, not from
//! a time, so records stored late (with older timestamps) are not skipped.

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
        for i in self.log_chunks(id, from, to) {
            let Some(c) = sv.dir.chunks.get(i) else { break };
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

    /// Records of source `id` in sealed chunks whose log address is in
    /// `[from, to)`, from the time index alone (no chunk is read); chunks
    /// retention dropped before this snapshot are not counted. 0 for an
    /// unknown source.
    pub fn count_log(&self, id: SourceId, from: u64, to: u64) -> u64 {
        let Ok(sv) = self.view(id) else { return 0 };
        self.log_chunks(id, from, to)
            .filter_map(|i| sv.dir.chunks.get(i))
            .map(|c| u64::from(c.count))
            .sum()
    }

    /// Chunk numbers of a source's retained chunks with address in `[from, to)`.
    fn log_chunks(&self, id: SourceId, from: u64, to: u64) -> std::ops::Range<usize> {
        let Ok(sv) = self.view(id) else { return 0..0 };
        let start = sv
            .dir
            .chunks
            .partition_point(|c| c.addr < from)
            .max(sv.dir.start);
        let end = sv.dir.chunks.partition_point(|c| c.addr < to);
        start..end.max(start)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, SourceId};

    #[test]
    fn log_ranges_partition_every_record_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            chunk_size: 4096,
            ..Config::default()
        };
        let (mut w, r) = crate::open(dir.path(), cfg.clone()).unwrap();
        let a = w.declare_source(SourceId(1), None).unwrap();
        let b = w.declare_source(SourceId(2), None).unwrap();
        let mut cuts = vec![0u64];
        let mut pushed = 0u64;
        for round in 0..5u64 {
            for i in 0..1000u64 {
                let ts = round * 10_000 + i;
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
            cuts.push(r.durable_snapshot().log_end());
        }
        let snap = r.durable_snapshot();
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
        assert_eq!(seen.len() as u64, pushed);
        assert_eq!(counted, pushed);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len() as u64, pushed, "no record twice");
        // Positions hold across a reopen: nothing new after the last cut,
        // and a record pushed after the reopen lands at or after it.
        let last = *cuts.last().unwrap();
        drop(snap);
        w.close().unwrap();
        let (mut w, r) = crate::open(dir.path(), cfg.clone()).unwrap();
        assert_eq!(
            r.durable_snapshot().count_log(SourceId(1), last, u64::MAX),
            0
        );
        let a = w.handle_of(SourceId(1)).unwrap();
        w.push(a, 99_999, &7u64.to_le_bytes()).unwrap();
        w.persist().unwrap();
        let snap = r.durable_snapshot();
        let mut got = Vec::new();
        snap.scan_log(SourceId(1), last, snap.log_end(), |ts, _| got.push(ts))
            .unwrap();
        assert_eq!(got, vec![99_999]);
        assert_eq!(snap.count_log(SourceId(1), 0, last), 5000);
        assert_eq!(snap.count_log(SourceId(9), 0, u64::MAX), 0);
    }
}
