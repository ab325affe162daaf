//! One counting query run four ways, to measure what each index saves.

use crate::error::Result;
use crate::log::chunk::NO_CHUNK;
use crate::snapshot::Snapshot;
use crate::source::SourceId;

/// Which indexes a query may use. All four give the same answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexMode {
    /// Walk the source's chunks backward from the newest through their `prev`
    /// links, reading each one, until one ends before `t0`.
    NoIndex,
    /// Jump to the window with the time index; read every chunk in it.
    TimeOnly,
    /// Walk bin summaries backward from the newest chunk (no time jump);
    /// read only chunks whose bins hold a matching value.
    RangeOnly,
    /// Jump to the window, then read only chunks whose bins match.
    TimeRange,
}

/// Answer of `count_matching`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountResult {
    /// Records with timestamp in the window and value in the range.
    pub count: u64,
    /// Sealed chunks read to find them.
    pub chunks_read: u64,
    /// Chunk summaries examined without reading the chunk.
    pub summaries_checked: u64,
}

impl Snapshot {
    /// The chunk before the one at `addr`: its `prev` link, unless recovery
    /// found that chunk missing (skipped as corrupt), in which case the walk
    /// goes on from the newest chunk of the source that is still there.
    fn prev_present(&self, sv: &crate::snapshot::SourceView, addr: u64, prev: u64) -> Result<u64> {
        if prev == NO_CHUNK {
            return Ok(NO_CHUNK);
        }
        let i = sv.dir.at_or_after(addr)?;
        // Normally the directory's previous chunk is `prev` itself.
        Ok(match i.checked_sub(1) {
            Some(j) => sv.dir.get(j)?.map_or(NO_CHUNK, |c| c.addr),
            None => NO_CHUNK,
        })
    }

    /// Counts records with timestamp in `[t0, t1]` and indexed value in
    /// `[lo, hi]`, using only the indexes `mode` allows.
    pub fn count_matching(
        &self,
        id: SourceId,
        t0: u64,
        t1: u64,
        lo: u64,
        hi: u64,
        mode: IndexMode,
    ) -> Result<CountResult> {
        let sv = self.view(id)?;
        let ix = self.index_of(sv)?;
        let mut r = CountResult::default();
        if t0 > t1 || lo > hi {
            return Ok(r);
        }
        let mut count = 0u64;
        let mut visit = |_: u64, bytes: &[u8]| {
            let v = ix.value(bytes);
            if v >= lo && v <= hi {
                count += 1;
            }
        };
        match mode {
            IndexMode::NoIndex => {
                let mut addr = sv.newest_chunk;
                while addr != NO_CHUNK && addr >= self.p.retained_from {
                    let h = self.each_in_chunk(addr, t0, t1, &mut visit)?;
                    r.chunks_read += 1;
                    if h.first_ts < t0 {
                        break;
                    }
                    addr = self.prev_present(sv, addr, h.prev)?;
                }
            }
            IndexMode::TimeOnly => {
                for i in sv.dir.overlapping(t0, t1)? {
                    let Some(c) = sv.dir.get(i)? else { break };
                    r.chunks_read += 1;
                    self.each_in_chunk(c.addr, t0, t1, &mut visit)?;
                }
            }
            IndexMode::RangeOnly => {
                for i in (sv.dir.start..sv.dir.len()).rev() {
                    let Some(c) = sv.dir.get(i)? else { break };
                    if c.last_ts < t0 {
                        break;
                    }
                    r.summaries_checked += 1;
                    if self.may_hold(sv, i, lo, hi) {
                        r.chunks_read += 1;
                        self.each_in_chunk(c.addr, t0, t1, &mut visit)?;
                    }
                }
            }
            IndexMode::TimeRange => {
                for i in sv.dir.overlapping(t0, t1)? {
                    let Some(c) = sv.dir.get(i)? else { break };
                    r.summaries_checked += 1;
                    if self.may_hold(sv, i, lo, hi) {
                        r.chunks_read += 1;
                        self.each_in_chunk(c.addr, t0, t1, &mut visit)?;
                    }
                }
            }
        }
        self.each_in_tail(sv, t0, t1, &mut visit)?;
        r.count = count;
        Ok(r)
    }
}
