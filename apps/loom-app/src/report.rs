//! The progress line, once per report interval.

use std::sync::Arc;

use crate::counters::Counters;

/// Prints `Records received: r, dropped: d, total received R dropped D,
/// not stored n, late m, late stored s, otlp accepted a rejected j throttled t,
/// connections open o refused f closed idle i, write points stored w
/// refused x late y bad lines z` once per
/// [`Progress::print`] (the first part is what `figures/` parses; `not
/// stored` counts records the engine refused, `late` records refused
/// because they were older than their source's newest stored record and
/// no late sibling could take them, `late stored` records that old stored
/// at their own time in a late sibling (`source_state`); the
/// OTLP counts are items acknowledged and refused in partial-success
/// responses, and requests told to retry later; `received` includes every
/// OTLP item received; `connections open` is the sum over the listeners
/// now, `refused` those over `--max-connections` and `closed idle` those
/// closed for idling or sending too slowly, in the interval; the `/write`
/// counts are points stored, points refused for any reason (`late` among
/// them) and lines that were not line protocol). Interval values are since
/// the previous line.
pub struct Progress {
    counters: Arc<Counters>,
    last: [u64; 14],
}

impl Progress {
    /// Counts from zero (the app's start).
    pub fn new(counters: Arc<Counters>) -> Self {
        Progress {
            counters,
            last: [0; 14],
        }
    }

    /// Prints one progress line.
    pub fn print(&mut self) {
        let counters = &self.counters;
        let last = self.last;
        let now = [
            Counters::get(&counters.recv.records_received),
            Counters::get(&counters.recv.records_dropped),
            Counters::get(&counters.records_refused),
            Counters::get(&counters.records_late),
            Counters::get(&counters.otlp_accepted),
            Counters::get(&counters.otlp_rejected),
            Counters::get(&counters.otlp_throttled),
            counters.gates.refused(),
            counters.gates.timed_out(),
            Counters::get(&counters.write.points_stored),
            Counters::get(&counters.write.points_refused),
            Counters::get(&counters.write.refused_late),
            Counters::get(&counters.write.bad_lines),
            Counters::get(&counters.records_late_stored),
        ];
        let open: usize = counters.gates.all().iter().map(|g| g.open()).sum();
        println!(
            "Records received: {}, dropped: {}, total received {} dropped {}, not stored {}, late {}, late stored {}, otlp accepted {} rejected {} throttled {}, connections open {} refused {} closed idle {}, write points stored {} refused {} late {} bad lines {}",
            now[0] - last[0],
            now[1] - last[1],
            now[0],
            now[1],
            now[2] - last[2],
            now[3] - last[3],
            now[13] - last[13],
            now[4] - last[4],
            now[5] - last[5],
            now[6] - last[6],
            open,
            now[7] - last[7],
            now[8] - last[8],
            now[9] - last[9],
            now[10] - last[10],
            now[11] - last[11],
            now[12] - last[12]
        );
        self.last = now;
    }
}

/// Prints `Memory: index held H bytes (summaries of recent data S, paged
/// back in C in P pages, time index D, time index paged back in E in R
/// reads), summary pages read L` after each
/// progress line: the engine's index memory, the part of loom-app's memory
/// that grows with the store when anything does (bounded by
/// `--index-cache-bytes` and retention), so a long run's RSS can be told
/// apart from it (`make soak` records it).
pub fn print_memory(reader: &loom::Reader) {
    let m = reader.snapshot().index_memory();
    println!(
        "Memory: index held {} bytes (summaries of recent data {}, paged back in {} in {} pages, time index {}, time index paged back in {} in {} reads), summary pages read {}",
        m.held_bytes(),
        m.summaries_bytes,
        m.cache_bytes,
        m.cache_pages,
        m.directory_bytes,
        m.directory_cache_bytes,
        m.directory_page_loads,
        m.page_loads
    );
}
