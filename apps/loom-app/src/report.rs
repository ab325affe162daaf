//! The progress line, once per report interval.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::counters::Counters;
use endpoint::output::sleep_unless;

/// Prints `Records received: r, dropped: d, total received R dropped D,
/// not stored n, raised m` every `interval` until `finished` (the first
/// part is what `figures/` parses; `not stored` counts records the engine
/// refused, `raised` records whose time was raised to keep order).
pub fn run(counters: Arc<Counters>, finished: Arc<AtomicBool>, interval: Duration) {
    let mut last = [0u64; 4];
    while sleep_unless(&finished, interval) {
        let now = [
            Counters::get(&counters.recv.records_received),
            Counters::get(&counters.recv.records_dropped),
            Counters::get(&counters.records_refused),
            Counters::get(&counters.records_clamped),
        ];
        println!(
            "Records received: {}, dropped: {}, total received {} dropped {}, not stored {}, raised {}",
            now[0] - last[0],
            now[1] - last[1],
            now[0],
            now[1],
            now[2] - last[2],
            now[3] - last[3]
        );
        last = now;
    }
}
