//! What the ingest thread keeps of a declared source, and the tally of
//! what became of a message's records. Both ingest paths use them: the
//! telemetry stream (`ingest`) and OTLP (`otlp_ingest`'s stage, which the
//! ingest thread drives), so they sit apart from both.

use loom::{SourceHandle, Writer};

/// What an ingest path keeps of a declared source: its handle and the
/// newest time pushed (the engine takes each source in time order).
pub struct Source {
    handle: SourceHandle,
    last_ts: u64,
    /// A source the store held at start: its newest stored time and how
    /// many of its records sit at that time, not yet matched by a resend.
    resumed: Option<(u64, u64)>,
}

impl Source {
    /// A source whose newest stored record is at `last_ts` (0: none).
    pub fn new(handle: SourceHandle, last_ts: u64) -> Self {
        Source {
            handle,
            last_ts,
            resumed: None,
        }
    }

    /// A source the store held at start, newest record at `last_ts`, with
    /// `at_last` records at that time.
    pub fn resumed(handle: SourceHandle, last_ts: u64, at_last: u64) -> Self {
        Source {
            handle,
            last_ts,
            resumed: Some((last_ts, at_last)),
        }
    }

    /// Whether a record of an acknowledged sender at `ts` was stored before
    /// this run started, so it is a resend: earlier than the newest time
    /// stored then, or at that time while the records stored there are not
    /// all matched yet. Series are stored in time order and what a crash
    /// keeps of one is a prefix of it, so a resent record at or before the
    /// stored end is one the store holds; a new record of a sender that
    /// stamps wall-clock time is later than any stored before the restart.
    #[inline]
    pub fn held_before(&mut self, ts: u64) -> bool {
        match self.resumed.as_mut() {
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

    /// Pushes one record at `ts` and counts it into `t`. A record older
    /// than the source's newest (it came after its time was released) is
    /// refused and counted as late; one the engine refuses is counted and
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
            t.late += 1;
            return Ok(());
        }
        match w.push(self.handle, ts, bytes) {
            Ok(_) => {
                self.last_ts = ts;
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
}

/// What happened to the records of one message.
#[derive(Default)]
pub struct Tally {
    pub(crate) ingested: u64,
    /// Refused: older than their source's newest stored record.
    pub(crate) late: u64,
    pub(crate) refused: u64,
    pub(crate) skipped: u64,
    pub(crate) newest: u64,
    /// Acknowledged senders' records found stored before a restart (resends).
    pub(crate) duplicates: u64,
    /// The latest time of the records put into the reorder stage (0: none).
    pub(crate) held_max: u64,
}
