//! What the ingest thread keeps of a declared source, and the tally of
//! what became of a message's records. Both ingest paths use them: the
//! telemetry stream (`ingest`) and OTLP (`otlp_ingest`'s stage, which the
//! ingest thread drives), so they sit apart from both.
//!
//! A record's time is never moved. A record older than its source's
//! newest stored record (later than the reorder window) is stored at its
//! own time in one of the source's late siblings (`loom::late_siblings`:
//! same schema, so every query sees it under its series); only when all
//! `loom::MAX_LATE_GENERATIONS` siblings hold newer records is it refused
//! and counted as late.

use loom::{SourceHandle, SourceId, Writer, MAX_LATE_GENERATIONS};

/// What an ingest path keeps of a declared source: its handle and the
/// newest time pushed (the engine takes each source in time order).
pub struct Source {
    handle: SourceHandle,
    last_ts: u64,
    /// A source the store held at start: its newest stored time and how
    /// many of its records sit at that time, not yet matched by a resend.
    resumed: Option<(u64, u64)>,
    id: SourceId,
    /// Late siblings, looked up in the store at this run's first late
    /// record (`None` until then: most sources never get one).
    late: Option<Vec<Sibling>>,
}

/// One late sibling: its generation, handle and newest stored time.
struct Sibling {
    generation: u32,
    handle: SourceHandle,
    last_ts: u64,
}

impl Source {
    /// Source `id` whose newest stored record is at `last_ts` (0: none).
    pub fn new(id: SourceId, handle: SourceHandle, last_ts: u64) -> Self {
        Source {
            handle,
            last_ts,
            resumed: None,
            id,
            late: None,
        }
    }

    /// Source `id`, held by the store at start, newest record at
    /// `last_ts`, with `at_last` records at that time.
    pub fn resumed(id: SourceId, handle: SourceHandle, last_ts: u64, at_last: u64) -> Self {
        Source {
            resumed: Some((last_ts, at_last)),
            ..Source::new(id, handle, last_ts)
        }
    }

    /// Whether a record of an acknowledged sender at `ts` (`bytes`) was
    /// stored before this run started, so it is a resend: earlier than the
    /// newest time stored then, or at that time while the records stored
    /// there are not all matched yet. Series are stored in time order and
    /// what a crash keeps of one is a prefix of it, so a resent record at
    /// or before the stored end is one the store holds; a new record of a
    /// sender that stamps wall-clock time is later than any stored before
    /// the restart. Except a record more than `recent_us` older than that
    /// end: it came late the first time (resent frames are the last ones
    /// sent before the restart), so it sits in a late sibling or was lost
    /// with the crash; the store is asked ([`Source::holds`]).
    #[inline]
    pub fn held_before(&mut self, w: &Writer, ts: u64, bytes: &[u8], recent_us: u64) -> bool {
        match self.resumed.as_mut() {
            Some((t, _)) if ts < t.saturating_sub(recent_us) => self.holds(w, ts, bytes),
            Some((t, _)) if ts < *t => true,
            Some((t, n)) if ts == *t && *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// The newest time stored (0: none).
    #[inline]
    pub fn last_ts(&self) -> u64 {
        self.last_ts
    }

    /// How many late siblings the source has (looked up in the store at
    /// the first call).
    pub fn late_count(&mut self, w: &Writer) -> u32 {
        self.siblings(w).len() as u32
    }

    /// The source's late siblings, looked up in the store at the first
    /// call of this run.
    fn siblings(&mut self, w: &Writer) -> &mut Vec<Sibling> {
        let id = self.id;
        self.late.get_or_insert_with(|| stored_siblings(w, id))
    }

    /// Whether a record at `ts` would be refused as late now: older than
    /// the source's newest record and than the newest of each of its late
    /// siblings, all of which exist. (Siblings' newest times only grow, so
    /// a record this passes is refused later only when records of its
    /// series stored meanwhile fill every sibling past it.)
    pub fn refused_as_late(&mut self, w: &Writer, ts: u64) -> bool {
        if ts >= self.last_ts {
            return false;
        }
        let siblings = self.siblings(w);
        siblings.len() as u32 >= MAX_LATE_GENERATIONS && siblings.iter().all(|s| s.last_ts > ts)
    }

    /// Whether the store holds a record at `ts` with exactly `bytes` in
    /// this source or one of its late siblings (a record an earlier run
    /// stored late, found again in what it logged).
    pub fn holds(&mut self, w: &Writer, ts: u64, bytes: &[u8]) -> bool {
        let id = self.id;
        let siblings = self.siblings(w);
        let reader = w.reader();
        let ids = std::iter::once(id).chain(
            siblings
                .iter()
                .map(|s| loom::late_sibling_id(id, s.generation)),
        );
        for sid in ids {
            let mut found = false;
            // A failing read finds nothing: the record is taken again.
            let _ = reader.scan(sid, ts, ts, |_, b| found |= b == bytes);
            if found {
                return true;
            }
        }
        false
    }

    /// Pushes one record at `ts` and counts it into `t`. A record older
    /// than the source's newest (it came after its time was released) goes
    /// to a late sibling at its own time, or is refused and counted as late
    /// when no sibling can take it; one the engine refuses is counted and
    /// its error returned for the caller to report.
    #[inline]
    pub fn push(
        &mut self,
        w: &mut Writer,
        ts: u64,
        bytes: &[u8],
        t: &mut Tally,
    ) -> Result<(), loom::Error> {
        if ts < self.last_ts {
            return self.push_late(w, ts, bytes, t);
        }
        store(w, (self.handle, &mut self.last_ts), ts, bytes, t)
    }

    /// A late record: into the sibling whose newest record is the latest
    /// not after `ts` (so siblings stay in time order and few), a new
    /// sibling when none fits, refused as late at the bound.
    #[cold]
    #[inline(never)]
    fn push_late(
        &mut self,
        w: &mut Writer,
        ts: u64,
        bytes: &[u8],
        t: &mut Tally,
    ) -> Result<(), loom::Error> {
        let id = self.id;
        let siblings = self.siblings(w);
        let fit = siblings
            .iter_mut()
            .filter(|s| s.last_ts <= ts)
            .max_by_key(|s| s.last_ts);
        let sib = match fit {
            Some(s) => s,
            None => match new_sibling(w, id, siblings) {
                Ok(Some(s)) => s,
                Ok(None) => {
                    t.late += 1;
                    return Ok(());
                }
                Err(e) => {
                    t.refused += 1;
                    return Err(e);
                }
            },
        };
        store(w, (sib.handle, &mut sib.last_ts), ts, bytes, t)?;
        t.late_stored += 1;
        Ok(())
    }
}

/// Pushes one record at `ts` into the source of `handle`, whose newest
/// time `last_ts` then moves on, and counts it into `t` (an engine refusal
/// as `refused`, its error returned).
#[inline(always)]
fn store(
    w: &mut Writer,
    (handle, last_ts): (SourceHandle, &mut u64),
    ts: u64,
    bytes: &[u8],
    t: &mut Tally,
) -> Result<(), loom::Error> {
    match w.push(handle, ts, bytes) {
        Ok(_) => {
            *last_ts = ts;
            t.ingested += 1;
            t.newest = t.newest.max(ts);
            Ok(())
        }
        Err(e) => {
            t.refused += 1;
            Err(e)
        }
    }
}

/// The late siblings of `id` the store holds, with their newest times.
fn stored_siblings(w: &Writer, id: SourceId) -> Vec<Sibling> {
    let snap = w.reader().snapshot();
    (1..=MAX_LATE_GENERATIONS)
        .filter_map(|generation| {
            let sib = loom::late_sibling_id(id, generation);
            let handle = w.handle_of(sib)?;
            Some(Sibling {
                generation,
                handle,
                last_ts: snap.latest_timestamp(sib).unwrap_or(0),
            })
        })
        .collect()
}

/// Declares the next free generation of `id`'s late siblings (with the
/// series' schema) and returns it; `None` when every generation exists or
/// the series has no schema to give it. A failing catalog write is the
/// caller's error.
fn new_sibling<'a>(
    w: &mut Writer,
    id: SourceId,
    siblings: &'a mut Vec<Sibling>,
) -> Result<Option<&'a mut Sibling>, loom::Error> {
    let Some(generation) =
        (1..=MAX_LATE_GENERATIONS).find(|g| siblings.iter().all(|s| s.generation != *g))
    else {
        return Ok(None);
    };
    let Some(schema) = w.reader().snapshot().schema(id).cloned() else {
        return Ok(None);
    };
    let sib = loom::late_sibling_id(id, generation);
    let handle = w.declare(sib, schema)?;
    log::info!(
        "late records of source {id} go to its late sibling {sib} (generation {generation})"
    );
    siblings.push(Sibling {
        generation,
        handle,
        last_ts: 0,
    });
    Ok(siblings.last_mut())
}

/// What happened to the records of one message.
#[derive(Default)]
pub struct Tally {
    pub(crate) ingested: u64,
    /// Refused as late: older than their source's newest stored record
    /// and than every late sibling's (at the bound of siblings).
    pub(crate) late: u64,
    /// Older than their source's newest stored record, stored at their
    /// own time in a late sibling (also counted in `ingested`).
    pub(crate) late_stored: u64,
    pub(crate) refused: u64,
    pub(crate) skipped: u64,
    pub(crate) newest: u64,
    /// Acknowledged senders' records found stored before a restart (resends).
    pub(crate) duplicates: u64,
    /// The latest time of the records put into the reorder stage (0: none).
    pub(crate) held_max: u64,
}
