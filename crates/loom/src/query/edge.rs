//! A window's left edge chunk, answered from its summaries minus the records
//! before the window.
//!
//! A chunk that starts before `t0` and ends inside the window holds records
//! on both sides of `t0`. Records are variable-length, so reaching the
//! first one at or after `t0` means walking every record before it; the
//! records inside the window then take a second walk to the chunk's end.
//! When the chunk is summarised, its summaries already hold all its
//! records: subtracting the ones before `t0` gives the window's part after
//! walking only those. Over many series every series has such a chunk, and
//! this walk (memory-bound: each record's bytes are touched) is most of what
//! a merged question costs, so it is worth halving. The right edge gains
//! nothing from this: its records inside the window come first and the walk
//! stops at `t1` already.

use crate::bin_summary::BinSummary;
use crate::error::{Error, Result};
use crate::index::directory::ChunkEntry;
use crate::index::state::IndexState;
use crate::log::chunk::HEADER_LEN;
use crate::log::record::RecordIter;
use crate::query::window::{EdgeScratch, Extremes};
use crate::query::Aggregate;
use crate::snapshot::{Snapshot, SourceView};

/// Whether chunk `c` is a left edge of `[t0, t1]`: it has records before
/// `t0` and none after `t1`.
#[inline]
pub(crate) fn is_left_edge(c: &ChunkEntry, t0: u64, t1: u64) -> bool {
    c.first_ts < t0 && c.last_ts >= t0 && c.last_ts <= t1
}

impl Snapshot {
    /// Calls `f(ts, bytes)` for the records of the chunk at `addr` before
    /// `t0`, in order, and returns how many there were; the walk stops at
    /// the first record at or after `t0`.
    pub(crate) fn each_before(
        &self,
        addr: u64,
        t0: u64,
        mut f: impl FnMut(u64, &[u8]),
    ) -> Result<u64> {
        let (header, data) = self.chunk(addr)?;
        let payload = &data.bytes()[HEADER_LEN..];
        let mut n = 0u64;
        for rec in RecordIter::new(payload, header.first_ts, header.count) {
            let (ts, bytes) = rec.map_err(|r| Error::corrupted(addr, r))?;
            if ts >= t0 {
                break;
            }
            n += 1;
            f(ts, bytes);
        }
        Ok(n)
    }

    /// The left edge's records inside the window in two parts: `before`
    /// gets the value of every record before `t0` (the walk stops at the
    /// first at or after it); when `before` then decides it cannot answer
    /// from summaries (it returns `false`), `rest` gets the value of every
    /// record from there to the chunk's end (all inside the window: the
    /// chunk is a left edge), continuing the same walk.
    pub(crate) fn split_left_edge(
        &self,
        addr: u64,
        t0: u64,
        value: impl Fn(&[u8]) -> u64,
        before: &mut Vec<u64>,
        decide: impl FnOnce(&[u64]) -> bool,
        mut rest: impl FnMut(u64),
    ) -> Result<()> {
        let (header, data) = self.chunk(addr)?;
        let payload = &data.bytes()[HEADER_LEN..];
        let mut it = RecordIter::new(payload, header.first_ts, header.count);
        before.clear();
        let mut first_inside = None;
        for rec in &mut it {
            let (ts, bytes) = rec.map_err(|r| Error::corrupted(addr, r))?;
            if ts >= t0 {
                first_inside = Some(value(bytes));
                break;
            }
            before.push(value(bytes));
        }
        if decide(before) {
            return Ok(());
        }
        if let Some(v) = first_inside {
            rest(v);
        }
        for rec in it {
            let (_, bytes) = rec.map_err(|r| Error::corrupted(addr, r))?;
            rest(value(bytes));
        }
        Ok(())
    }
}

/// Most bins looked at for one extreme before giving up on the summaries
/// (each look walks the records before the window once).
const MAX_BINS_LOOKED_AT: usize = 8;

/// The extreme (`max` when `top`, else `min`) of the chunk's records inside
/// the window, from its summaries `bins` (sorted by bin) and the values
/// `before` the window: the first bin from that end holding more records
/// than `before` has in it gives its summary's extreme, unless `before`
/// holds that very value (the summary cannot tell whether the window holds
/// it too). `None` when the summaries cannot tell.
fn extreme(ix: &IndexState, bins: &[BinSummary], before: &[u64], top: bool) -> Option<u64> {
    let mut look = |b: &BinSummary| {
        let here = before
            .iter()
            .filter(|&&v| ix.bins.bin_of(v) == b.bin)
            .count();
        if b.count as usize <= here {
            return None; // every record of this bin is before the window
        }
        let v = if top { b.max } else { b.min };
        Some((!before.contains(&v)).then_some(v))
    };
    let found = if top {
        bins.iter()
            .rev()
            .take(MAX_BINS_LOOKED_AT)
            .find_map(&mut look)
    } else {
        bins.iter().take(MAX_BINS_LOOKED_AT).find_map(&mut look)
    };
    found.flatten()
}

/// The window's part of a summarised left edge from its summaries less
/// the values `before` the window; `None` when the summaries cannot give
/// an extreme `need` asks for (the caller then reads the rest).
pub(crate) fn from_summaries(
    ix: &IndexState,
    bins: &[BinSummary],
    before: &[u64],
    need: Extremes,
) -> Option<Aggregate> {
    let count: u64 = bins.iter().map(|b| u64::from(b.count)).sum();
    let count = count.checked_sub(before.len() as u64)?;
    if count == 0 {
        return Some(Aggregate::default());
    }
    let sum: u128 = bins.iter().map(|b| b.sum).sum();
    let sum = sum.checked_sub(before.iter().map(|&v| u128::from(v)).sum())?;
    let min = if need.min {
        extreme(ix, bins, before, false)?
    } else {
        0
    };
    let max = if need.max {
        extreme(ix, bins, before, true)?
    } else {
        0
    };
    Some(Aggregate {
        count,
        sum,
        min: Some(min),
        max: Some(max),
    })
}

/// What [`Snapshot::left_edge_part`] did with a left edge chunk.
pub(crate) enum LeftEdge {
    /// The chunk has no summaries: nothing was read.
    NotSummarised,
    /// Its summaries could not tell an extreme asked for: every value of
    /// the window went to `rest`.
    Read,
    /// The window's part, from its summaries (left sorted by bin in the
    /// scratch's first vector) less the values before `t0` (its second).
    FromSummaries(Aggregate),
}

impl Snapshot {
    /// Splits left edge chunk `chunk_no` (`c`) at `t0`: the window's part
    /// from its summaries less the records before `t0` when those tell the
    /// extremes `need` asks for, else every value of the window to `rest`
    /// (reading on to the chunk's end). `scratch` is reused across calls.
    pub(crate) fn left_edge_part(
        &self,
        (sv, ix): (&SourceView, &IndexState),
        (chunk_no, c): (usize, &ChunkEntry),
        t0: u64,
        need: Extremes,
        scratch: &mut EdgeScratch,
        rest: impl FnMut(u64),
    ) -> Result<LeftEdge> {
        let Some(bins) = self.summaries(sv, chunk_no) else {
            return Ok(LeftEdge::NotSummarised);
        };
        let (summaries, before) = scratch;
        summaries.clear();
        summaries.extend(bins);
        summaries.sort_unstable_by_key(|b| b.bin);
        let mut part = None;
        self.split_left_edge(
            c.addr,
            t0,
            |bytes| ix.value(bytes),
            before,
            |before| {
                part = from_summaries(ix, summaries, before, need);
                part.is_some()
            },
            rest,
        )?;
        Ok(part.map_or(LeftEdge::Read, LeftEdge::FromSummaries))
    }

    /// Adds the records of left edge chunk `chunk_no` (`c`) inside the
    /// window starting at `t0` to `agg` ([`Snapshot::left_edge_part`]).
    /// `false` (nothing added) when the chunk is not summarised.
    pub(crate) fn aggregate_left_edge(
        &self,
        source: (&SourceView, &IndexState),
        chunk: (usize, &ChunkEntry),
        t0: u64,
        need: Extremes,
        agg: &mut Aggregate,
        scratch: &mut EdgeScratch,
    ) -> Result<bool> {
        match self.left_edge_part(source, chunk, t0, need, scratch, |v| agg.add(v))? {
            LeftEdge::NotSummarised => Ok(false),
            LeftEdge::Read => Ok(true),
            LeftEdge::FromSummaries(p) => {
                agg.merge_part(&p);
                Ok(true)
            }
        }
    }
}
