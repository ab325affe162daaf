//! Asking a named question and printing its answer lines, and the
//! ablation window. When questions are asked: periodically while data
//! flows (`endpoint::app::spawn_periodic`, started in `app.rs`), once at
//! the end, or (ablation) after ingest stops at the cut-off (`running.rs`).

use endpoint::output::AnswerLines;

use loom::Reader;

use crate::queries::{self, Query};

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
