//! Record scans: by value range with the index, or raw by time only.

use crate::error::Result;
use crate::query::ScanStats;
use crate::snapshot::Snapshot;
use crate::source::SourceId;

impl Snapshot {
    /// Calls `f(ts, value, bytes)`, in timestamp order, for every record with
    /// timestamp in `[t0, t1]` and indexed value in `[lo, hi]`. Reads only
    /// chunks whose bin summaries hold a value in `[lo, hi]`.
    pub fn range_scan(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        lo: u64,
        hi: u64,
        mut f: impl FnMut(u64, u64, &[u8]),
    ) -> Result<ScanStats> {
        let sv = self.view(id)?;
        let ix = self.index_of(sv)?;
        let mut st = ScanStats::default();
        if t0 > t1 || lo > hi {
            return Ok(st);
        }
        let mut visit = |ts: u64, bytes: &[u8]| {
            st.records_scanned += 1;
            let v = ix.value(bytes);
            if v >= lo && v <= hi {
                st.records_matched += 1;
                f(ts, v, bytes);
            }
        };
        let mut chunks_read = 0;
        for i in sv.dir.overlapping(t0, t1)? {
            let Some(c) = sv.dir.get(i)? else { break };
            if self.may_hold(sv, i, lo, hi) {
                chunks_read += 1;
                self.each_in_chunk(c.addr, t0, t1, &mut visit)?;
            }
        }
        self.each_in_tail(sv, t0, t1, &mut visit)?;
        st.chunks_read = chunks_read;
        Ok(st)
    }

    /// Calls `f(ts, bytes)`, in timestamp order, for every record with
    /// timestamp in `[t0, t1]`; no range index needed (time index only).
    pub fn scan(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        mut f: impl FnMut(u64, &[u8]),
    ) -> Result<ScanStats> {
        let sv = self.view(id)?;
        let mut st = ScanStats::default();
        if t0 > t1 {
            return Ok(st);
        }
        let mut n = 0u64;
        let mut visit = |ts: u64, bytes: &[u8]| {
            n += 1;
            f(ts, bytes);
        };
        for i in sv.dir.overlapping(t0, t1)? {
            let Some(c) = sv.dir.get(i)? else { break };
            st.chunks_read += 1;
            self.each_in_chunk(c.addr, t0, t1, &mut visit)?;
        }
        self.each_in_tail(sv, t0, t1, &mut visit)?;
        st.records_scanned = n;
        st.records_matched = n;
        Ok(st)
    }

    /// The record at `addr`, as `(timestamp, bytes)`; `None` if this snapshot
    /// does not hold it.
    pub fn get(&self, addr: crate::source::RecordAddress) -> Result<Option<(u64, Vec<u8>)>> {
        let sv = self.view(addr.source)?;
        if addr.seq >= sv.records {
            return Ok(None);
        }
        let i = sv.dir.holding_seq(addr.seq)?;
        if i < sv.dir.start {
            return Ok(None);
        }
        let mut found = None;
        match sv.dir.get(i)? {
            Some(c) => {
                let want = addr.seq - c.first_seq;
                let mut k = 0u64;
                self.each_in_chunk(c.addr, 0, u64::MAX, |ts, bytes| {
                    if k == want {
                        found = Some((ts, bytes.to_vec()));
                    }
                    k += 1;
                })?;
            }
            None => {
                let want = addr.seq - (sv.records - u64::from(sv.tail_count));
                let mut k = 0u64;
                self.each_in_tail(sv, 0, u64::MAX, |ts, bytes| {
                    if k == want {
                        found = Some((ts, bytes.to_vec()));
                    }
                    k += 1;
                })?;
            }
        }
        Ok(found)
    }
}
