//! The progress line, once per report interval.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::counters::Counters;
use endpoint::output::sleep_unless;

/// Prints `Records received: r, dropped: d, total received R dropped D,
/// not stored n, late m, otlp accepted a rejected j throttled t` every
/// `interval` until `finished` (the first part is what `figures/` parses;
/// `not stored` counts records the engine refused, `late` records refused
/// because they were older than their source's newest stored record; the
/// OTLP counts are items acknowledged and refused in partial-success
/// responses, and requests told to retry later; `received` includes every
/// OTLP item received).
pub fn run(counters: Arc<Counters>, finished: Arc<AtomicBool>, interval: Duration) {
    let mut last = [0u64; 7];
    while sleep_unless(&finished, interval) {
        let now = [
            Counters::get(&counters.recv.records_received),
            Counters::get(&counters.recv.records_dropped),
            Counters::get(&counters.records_refused),
            Counters::get(&counters.records_late),
            Counters::get(&counters.otlp_accepted),
            Counters::get(&counters.otlp_rejected),
            Counters::get(&counters.otlp_throttled),
        ];
        println!(
            "Records received: {}, dropped: {}, total received {} dropped {}, not stored {}, late {}, otlp accepted {} rejected {} throttled {}",
            now[0] - last[0],
            now[1] - last[1],
            now[0],
            now[1],
            now[2] - last[2],
            now[3] - last[3],
            now[4] - last[4],
            now[5] - last[5],
            now[6] - last[6]
        );
        last = now;
    }
}
