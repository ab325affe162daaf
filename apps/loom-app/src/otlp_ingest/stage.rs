//! The ingest thread's side of OTLP: declares each OTLP series on first
//! sight (its schema from the registry), holds records in a reorder stage
//! of its own (OTLP times are always the data's own, whatever
//! `--timestamps` says) and pushes them in time order per series.
//!
//! A record older than its series' newest stored record came later than
//! the window allowed: it goes through the stage like any other and is
//! stored at its own time in a late sibling of its series
//! (`source_state`). Only one no sibling can take (all
//! `loom::MAX_LATE_GENERATIONS` hold newer records) is refused and counted
//! as late, when the request is taken, so the request's answer reports it;
//! none is stored at another time.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use loom::{SourceId, Writer};
use otlp::{Registry, Shaped};

use super::admission::Admission;
use crate::intake_log::{FileNo, IntakeLog};
use crate::reorder::{Keyed, Reorder, Timed};
use crate::source_state::{Source, Tally};

/// An OTLP record on its way to the engine, with the intake-log file that
/// holds it (0 when there is no log).
pub struct Held {
    file: FileNo,
    rec: Shaped,
}

impl Keyed for Held {
    type Key = u64;
    fn key(&self) -> u64 {
        self.rec.source
    }
}

/// OTLP records on their way into the engine.
pub struct OtlpStage {
    registry: Arc<Registry>,
    series: HashMap<u64, Source>,
    reorder: Option<Reorder<Held>>,
    ready: Vec<Timed<Held>>,
    errors: u64,
    /// What the handlers answer by themselves from (see `admission.rs`).
    admission: Arc<Admission>,
    /// Requests taken; the most late siblings of any announced series;
    /// series announced to `admission`; series of the last request taken.
    processed: u64,
    most: u32,
    announced: HashSet<u64>,
    touched: Vec<u64>,
}

impl OtlpStage {
    /// A stage holding records `window_us` of event time (0: none),
    /// publishing what handlers may admit by themselves to `admission`.
    pub fn new(registry: Arc<Registry>, window_us: u64, admission: Arc<Admission>) -> Self {
        OtlpStage {
            registry,
            series: HashMap::new(),
            reorder: (window_us > 0).then(|| Reorder::new(window_us)),
            ready: Vec::new(),
            errors: 0,
            admission,
            processed: 0,
            most: 0,
            announced: HashSet::new(),
            touched: Vec::new(),
        }
    }

    /// After a request is taken (admitted and added): publishes the
    /// requests taken and the most late siblings of any series, then
    /// announces the request's series not announced yet.
    pub fn published(&mut self, w: &Writer) {
        self.processed += 1;
        let mut new = Vec::new();
        for id in &self.touched {
            if let Some(s) = self.series.get_mut(id) {
                self.most = self.most.max(s.late_count(w));
                if self.announced.insert(*id) {
                    new.push(*id);
                }
            }
        }
        // Without a window one request can start several siblings: the
        // handlers always wait for the answer.
        let most = match self.reorder {
            Some(_) => self.most,
            None => loom::MAX_LATE_GENERATIONS,
        };
        self.admission.publish(self.processed, most, &new);
    }

    /// Declares the series of one request's records and keeps those that
    /// can be stored at their own time: records of a series that cannot be
    /// declared are counted as skipped, late ones no late sibling can take
    /// as late.
    pub fn admit(
        &mut self,
        w: &mut Writer,
        mut records: Vec<Shaped>,
        t: &mut Tally,
    ) -> Vec<Shaped> {
        self.declare_new(w, &records);
        let before = records.len();
        records.retain(|r| self.series.contains_key(&r.source));
        t.skipped += (before - records.len()) as u64;
        let before = records.len();
        records.retain(|r| {
            self.series
                .get_mut(&r.source)
                .is_some_and(|s| !s.refused_as_late(w, r.time_us))
        });
        t.late += (before - records.len()) as u64;
        self.touched.clear();
        for r in &records {
            if self.touched.last() != Some(&r.source) {
                self.touched.push(r.source);
            }
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        records
    }

    /// Stores or holds admitted records (kept in intake-log `file`, 0: none),
    /// then stores whatever the window releases; pushed records are
    /// reported to `log`.
    pub fn add(
        &mut self,
        w: &mut Writer,
        records: Vec<Shaped>,
        file: FileNo,
        t: &mut Tally,
        log: Option<&mut IntakeLog>,
    ) {
        match self.reorder.as_mut() {
            Some(stage) => {
                for rec in records {
                    stage.add(rec.time_us, Held { file, rec });
                }
                let mut ready = std::mem::take(&mut self.ready);
                stage.release(&mut ready);
                self.store_all(w, &mut ready, t, log);
                self.ready = ready;
            }
            None => {
                let n = records.len() as u64;
                for r in &records {
                    self.store(w, r.time_us, r, t);
                }
                if let Some(log) = log {
                    log.pushed(file, n);
                }
            }
        }
    }

    /// Records an earlier run logged and did not store: each goes through
    /// the window again unless the store holds it already: its series
    /// holds a record at its time or later (stored in time order before
    /// the crash), or, for a record older than the series' newest, the
    /// series or a late sibling holds it at its time with the same bytes.
    /// Returns how many are taken, and what was stored of them now.
    pub fn replay(
        &mut self,
        w: &mut Writer,
        left: Vec<(FileNo, Shaped)>,
        log: &mut IntakeLog,
    ) -> (u64, Tally) {
        let mut by_file: Vec<(FileNo, Vec<Shaped>)> = Vec::new();
        for (f, r) in left {
            match by_file.last_mut() {
                Some((g, v)) if *g == f => v.push(r),
                _ => by_file.push((f, vec![r])),
            }
        }
        let mut taken = 0;
        let mut t = Tally::default();
        for (file, mut records) in by_file {
            self.declare_new(w, &records);
            records.retain(|r| {
                self.series.get_mut(&r.source).is_some_and(|s| {
                    r.time_us > s.last_ts()
                        || (r.time_us < s.last_ts() && !s.holds(w, r.time_us, &r.bytes))
                })
            });
            taken += records.len() as u64;
            log.replayed(file, records.len() as u64);
            self.add(w, records, file, &mut t, Some(log));
        }
        (taken, t)
    }

    /// Pushes released records in order and reports them to `log`.
    fn store_all(
        &mut self,
        w: &mut Writer,
        ready: &mut Vec<Timed<Held>>,
        t: &mut Tally,
        mut log: Option<&mut IntakeLog>,
    ) {
        let mut run: (FileNo, u64) = (0, 0);
        for (ts, h) in ready.drain(..) {
            self.store(w, ts, &h.rec, t);
            if h.file != run.0 {
                if let Some(log) = log.as_deref_mut() {
                    log.pushed(run.0, run.1);
                }
                run = (h.file, 0);
            }
            run.1 += 1;
        }
        if let Some(log) = log {
            log.pushed(run.0, run.1);
        }
    }

    /// Declares every series of `records` not seen yet, all in one catalog
    /// write (a burst of new series costs one durable write, not one each).
    fn declare_new(&mut self, w: &mut Writer, records: &[Shaped]) {
        let mut new: Vec<u64> = records
            .iter()
            .map(|r| r.source)
            .filter(|id| !self.series.contains_key(id))
            .collect();
        if new.is_empty() {
            return;
        }
        new.sort_unstable();
        new.dedup();
        let mut wanted = Vec::with_capacity(new.len());
        for id in new {
            match self.registry.schema(id) {
                Some(schema) => wanted.push((SourceId(id), (*schema).clone())),
                None => self.log_error(format_args!("record of unknown series {id:#x}")),
            }
        }
        let ids: Vec<SourceId> = wanted.iter().map(|(id, _)| *id).collect();
        let names: Vec<String> = wanted
            .iter()
            .map(|(_, s)| crate::sources::describe(s))
            .collect();
        let results = match w.declare_all(wanted) {
            Ok(r) => r,
            Err(e) => {
                self.log_error(format_args!("cannot declare {} series: {e}", ids.len()));
                return;
            }
        };
        let reader = w.reader();
        for ((id, name), res) in ids.into_iter().zip(names).zip(results) {
            match res {
                Ok(handle) => {
                    log::info!("declared OTLP series {name} ({:#x})", id.0);
                    // A reopened store's series continues after its newest
                    // record (the engine refuses older times).
                    let last_ts = reader.latest_timestamp(id).unwrap_or(0);
                    self.series.insert(id.0, Source::new(id, handle, last_ts));
                }
                Err(e) => {
                    self.log_error(format_args!("cannot declare series {name}: {e}"));
                }
            }
        }
    }

    /// Stores everything held (idle senders, end of ingest).
    pub fn flush(&mut self, w: &mut Writer, log: Option<&mut IntakeLog>) -> Tally {
        let mut t = Tally::default();
        if let Some(stage) = self.reorder.as_mut() {
            let mut ready = Vec::new();
            stage.flush(&mut ready);
            self.store_all(w, &mut ready, &mut t, log);
        }
        t
    }

    /// Records held now.
    pub fn held(&self) -> usize {
        self.reorder.as_ref().map_or(0, |r| r.held())
    }

    fn log_error(&mut self, what: std::fmt::Arguments) {
        self.errors += 1;
        if self.errors <= 10 {
            log::error!("OTLP: {what}");
        }
    }

    /// Pushes one record at `ts` (its series declared by `take`; see
    /// [`Source::push`]).
    fn store(&mut self, w: &mut Writer, ts: u64, r: &Shaped, t: &mut Tally) {
        let Some(s) = self.series.get_mut(&r.source) else {
            t.skipped += 1;
            return;
        };
        if let Err(e) = s.push(w, ts, &r.bytes, t) {
            self.log_error(format_args!("push failed: {e}"));
        }
    }
}
