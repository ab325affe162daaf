//! The ingest thread's side of OTLP: declares each OTLP series on first
//! sight (its schema from the registry), holds records in a reorder stage
//! of its own (OTLP times are always the data's own, whatever
//! `--timestamps` says) and pushes them in time order per series.

use std::collections::HashMap;
use std::sync::Arc;

use loom::{SourceId, Writer};
use otlp::{Registry, Shaped};

use crate::ingest::{Source, Tally};
use crate::reorder::{Reorder, Timed};

/// OTLP records on their way into the engine.
pub struct OtlpStage {
    registry: Arc<Registry>,
    series: HashMap<u64, Source>,
    reorder: Option<Reorder<Shaped>>,
    ready: Vec<Timed<Shaped>>,
    errors: u64,
}

impl OtlpStage {
    /// A stage holding records `window_us` of event time (0: none).
    pub fn new(registry: Arc<Registry>, window_us: u64) -> Self {
        OtlpStage {
            registry,
            series: HashMap::new(),
            reorder: (window_us > 0).then(|| Reorder::new(window_us)),
            ready: Vec::new(),
            errors: 0,
        }
    }

    /// Takes the records of one request; returns what was stored now.
    pub fn take(&mut self, w: &mut Writer, mut records: Vec<Shaped>) -> Tally {
        let mut t = Tally::default();
        self.declare_new(w, &records);
        let before = records.len();
        records.retain(|r| self.series.contains_key(&r.source));
        t.skipped += (before - records.len()) as u64;
        match self.reorder.as_mut() {
            Some(stage) => {
                for r in records {
                    stage.add(r.time_us, r);
                }
                let mut ready = std::mem::take(&mut self.ready);
                stage.release(&mut ready);
                for (ts, r) in ready.drain(..) {
                    self.store(w, ts, &r, &mut t);
                }
                self.ready = ready;
            }
            None => {
                for r in &records {
                    self.store(w, r.time_us, r, &mut t);
                }
            }
        }
        t
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
                    self.series.insert(id.0, Source::new(handle, last_ts));
                }
                Err(e) => {
                    self.log_error(format_args!("cannot declare series {name}: {e}"));
                }
            }
        }
    }

    /// Stores everything held (idle senders, end of ingest).
    pub fn flush(&mut self, w: &mut Writer) -> Tally {
        let mut t = Tally::default();
        if let Some(stage) = self.reorder.as_mut() {
            let mut ready = Vec::new();
            stage.flush(&mut ready);
            for (ts, r) in &ready {
                self.store(w, *ts, r, &mut t);
            }
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
