//! The TCP stream's frames: untagged runs (version 1) by the app's
//! timestamp mode, tagged runs (version-2 senders) with their tags and,
//! when the sender stamps wall-clock time, their own times.

use endpoint::{Frames, SeriesContext};
use telemetry::raw::{self, SourceKey};

use super::{Ingest, Tally, TimestampMode};
use crate::reorder::{Timed, WireRecord};
use crate::sources::schema_of;

/// Beyond the reorder window, how far before a resumed series' stored end
/// an acknowledged sender's resent records count as stored in time order
/// (unacknowledged frames are the last second or so a sender sent); older
/// resent records are looked up in the store (they came late).
const RESEND_RECENT_US: u64 = 2_000_000;

impl Ingest {
    /// The slot of source `key` under the tags of `ctx`, declared on first
    /// sight.
    fn tagged_slot(&mut self, ctx: &SeriesContext, key: SourceKey) -> Option<usize> {
        if let Some(&i) = self.tagged.get(&(ctx.key, key)) {
            return Some(i);
        }
        let id = ctx.source_id(&key.tag());
        let i = match self.sources.lookup_id(id) {
            Some(i) => i,
            None => self.declare(id, None, schema_of(&ctx.series(key.series())))?,
        };
        self.tagged.insert((ctx.key, key), i);
        Some(i)
    }

    /// Takes one group of frames, run by run of series context: records
    /// of untagged runs go by the app's timestamp mode; tagged runs
    /// (version-2 senders) get their tags, and their own times when the
    /// sender stamps wall-clock time. Event times go through the reorder
    /// stage when it is on; everything else is pushed straight from the
    /// wire bytes.
    pub(super) fn frames(&mut self, f: &Frames) {
        let mut t = Tally::default();
        let mut records = f.records();
        let mut held = false;
        for run in f.runs() {
            let part = records.by_ref().take(run.records as usize);
            match run.context {
                None => held |= self.untagged(f.arrival_us, part, &mut t),
                Some(ctx) => held |= self.tagged(&ctx, f.arrival_us, part, &mut t),
            }
        }
        if held {
            let mut ready = std::mem::take(&mut self.ready);
            if let Some(stage) = self.reorder.as_mut() {
                stage.release(&mut ready);
            }
            self.store_all(&ready, &mut t);
            ready.clear();
            self.ready = ready;
        }
        // Any group's release may settle an acknowledged sender's frames
        // (other senders' data moves the window on).
        let released = self.released_through();
        if let Some(acks) = self.acks.as_mut() {
            if let Some(sender) = f.acked_sender {
                acks.add(sender, f.last_seq, t.held_max);
            }
            acks.settle(released);
        }
        self.account(t);
    }

    /// Records without added tags; true when some went to the reorder stage.
    fn untagged<'a>(
        &mut self,
        arrival_us: u64,
        mut part: impl Iterator<Item = (telemetry::Kind, &'a [u8])>,
        t: &mut Tally,
    ) -> bool {
        let Some(first) = part.next() else {
            return false;
        };
        self.anchor(raw::event_time(first.0, first.1));
        let offset = self.offset.unwrap_or(0);
        let event = self.cfg.timestamps == TimestampMode::Event;
        for (kind, body) in std::iter::once(first).chain(part) {
            let Some(i) = self.slot_of(SourceKey::of(kind, body)) else {
                t.skipped += 1;
                continue;
            };
            if event {
                let ts = raw::event_time(kind, body).saturating_add(offset);
                self.place(i, ts, kind, body, t);
            } else {
                let arrival = self.arrival(arrival_us);
                self.push(i, arrival, body, t);
            }
        }
        event && self.reorder.is_some()
    }

    /// Arrival mode's stamp: receivers stamp their groups on their own
    /// threads and the ingest thread takes them in order, so an earlier
    /// stamp behind a later one means it arrived at the same moment
    /// (arrival times never go back).
    #[inline]
    fn arrival(&mut self, arrival_us: u64) -> u64 {
        let arrival = arrival_us.max(self.arrival_clock);
        self.arrival_clock = arrival;
        arrival
    }

    /// Records of one series context; true when some went to the reorder stage.
    fn tagged<'a>(
        &mut self,
        ctx: &SeriesContext,
        arrival_us: u64,
        part: impl Iterator<Item = (telemetry::Kind, &'a [u8])>,
        t: &mut Tally,
    ) -> bool {
        let event = ctx.wall_clock || self.cfg.timestamps == TimestampMode::Event;
        for (kind, body) in part {
            let Some(i) = self.tagged_slot(ctx, SourceKey::of(kind, body)) else {
                t.skipped += 1;
                continue;
            };
            if ctx.wall_clock {
                let ts = raw::event_time(kind, body);
                let recent = self.cfg.reorder_window_us.saturating_add(RESEND_RECENT_US);
                if ctx.acked
                    && self
                        .sources
                        .get_mut(i)
                        .is_some_and(|s| s.held_before(&self.writer, ts, body, recent))
                {
                    t.duplicates += 1;
                    continue;
                }
                self.place(i, ts, kind, body, t);
            } else if event {
                self.anchor(raw::event_time(kind, body));
                let ts = raw::event_time(kind, body).saturating_add(self.offset.unwrap_or(0));
                self.place(i, ts, kind, body, t);
            } else {
                let arrival = self.arrival(arrival_us);
                self.push(i, arrival, body, t);
            }
        }
        event && self.reorder.is_some()
    }

    /// A record at its event time: into the reorder stage when it is on,
    /// else pushed. A record late already (older than its source's newest
    /// stored one) goes through the stage too: released with the next
    /// release, sorted with the other late records of its group, into a
    /// late sibling at its own time (see [`Source::push`](crate::source_state::Source::push)).
    #[inline]
    fn place(&mut self, slot: usize, ts: u64, kind: telemetry::Kind, body: &[u8], t: &mut Tally) {
        match self.reorder.as_mut() {
            Some(stage) => {
                t.held_max = t.held_max.max(ts);
                stage.add(ts, WireRecord::new(slot, kind, body))
            }
            None => self.push(slot, ts, body, t),
        }
    }

    /// Stores records released by the reorder stage.
    pub(super) fn store_all(&mut self, ready: &[Timed<WireRecord>], t: &mut Tally) {
        for (ts, r) in ready {
            self.push(r.slot(), *ts, r.bytes(), t);
        }
    }
}
