//! When questions are asked: periodically while data flows, once at the
//! end, or (ablation) after ingest stops at the cut-off.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use endpoint::output::{sleep_unless, AnswerLines};

use loom::Reader;

use crate::counters::Counters;
use crate::ingest::{epoch_us, TimestampMode};
use crate::queries::{self, Query};

/// Window of the phase questions: [now − 80 s, now − 20 s].
pub const WINDOW_START_AGO_US: u64 = 80_000_000;
/// See [`WINDOW_START_AGO_US`].
pub const WINDOW_END_AGO_US: u64 = 20_000_000;
/// Length of the ablation window.
pub const ABLATION_WINDOW_US: u64 = 120_000_000;
/// Gap between the ablation window's end plus lookback and the newest data.
pub const ABLATION_MARGIN_US: u64 = 5_000_000;

/// Asks `q` over `[t0, t1]` and prints the answer lines.
pub fn print_answer(reader: &Reader, q: Query, t0: u64, t1: u64, machine: bool) {
    match queries::run(reader, q, t0, t1) {
        None => {}
        Some(Ok(a)) => {
            AnswerLines {
                name: q.name(),
                t0,
                t1,
                text: &a.text,
                machine: &a.machine,
                latency: a.latency,
            }
            .print(machine);
        }
        Some(Err(e)) => println!("Query {} failed: {e}", q.name()),
    }
}

/// Settings of the periodic questions.
pub struct Periodic {
    pub queries: Vec<Query>,
    pub interval: Duration,
    pub count: u32,
    pub machine: bool,
    pub timestamps: TimestampMode,
}

/// Asks the questions every interval over [now − 80 s, now − 20 s], where
/// now is the wall clock (arrival times) or the newest stored record (event
/// times).
pub fn periodic(reader: Reader, counters: Arc<Counters>, finished: Arc<AtomicBool>, p: Periodic) {
    for _ in 0..p.count {
        if !sleep_unless(&finished, p.interval) {
            return;
        }
        let now = match p.timestamps {
            TimestampMode::Arrival => epoch_us(),
            TimestampMode::Event => Counters::get(&counters.now_us),
        };
        let t0 = now.saturating_sub(WINDOW_START_AGO_US);
        let t1 = now.saturating_sub(WINDOW_END_AGO_US);
        for &q in &p.queries {
            print_answer(&reader, q, t0, t1, p.machine);
        }
    }
}
