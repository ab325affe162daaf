//! One question's statements, run in process on one snapshot.

use influxql::{Access, Cell, Limits, StatementResult};
use loom::{IndexMode, Snapshot};

/// Runs statements on one snapshot through one index mode.
pub struct Asker<'a> {
    snap: &'a Snapshot,
    access: Access,
}

/// The first row of a statement's first series, by column name (InfluxDB
/// returns no series when nothing matched: every column is then absent).
pub struct Row {
    columns: Vec<String>,
    cells: Vec<Cell>,
}

impl Row {
    /// The cell of `column`, `None` when absent or null.
    pub fn get(&self, column: &str) -> Option<&Cell> {
        let i = self.columns.iter().position(|c| c == column)?;
        self.cells.get(i).filter(|c| **c != Cell::Null)
    }

    /// `column` as an unsigned integer (counts, µs latencies, ports).
    pub fn u64(&self, column: &str) -> Option<u64> {
        match self.get(column)? {
            Cell::UInt(v) => Some(*v),
            Cell::Int(v) => u64::try_from(*v).ok(),
            Cell::Float(v) if *v >= 0.0 => Some(*v as u64),
            _ => None,
        }
    }

    /// The row's time in µs since the epoch.
    pub fn time_us(&self) -> Option<u64> {
        match self.get("time")? {
            Cell::Time(ns) => u64::try_from(ns.div_euclid(1000)).ok(),
            _ => None,
        }
    }
}

impl<'a> Asker<'a> {
    /// Statements on `snap`, counts with a bound on the indexed field
    /// reaching records through `mode`.
    pub fn new(snap: &'a Snapshot, mode: IndexMode) -> Self {
        Asker {
            snap,
            access: Access::with_mode(mode),
        }
    }

    /// Sealed chunks read by the statements so far.
    pub fn chunks_read(&self) -> u64 {
        self.access.chunks_read
    }

    /// Every row of `statement`'s first series.
    pub fn all(&mut self, statement: String) -> influxql::Result<Vec<Row>> {
        let r = self.result(&statement)?;
        Ok(r.series
            .into_iter()
            .next()
            .map(|s| {
                let columns = s.columns;
                s.values
                    .into_iter()
                    .map(|cells| Row {
                        columns: columns.clone(),
                        cells,
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The first row of `statement`'s first series (an empty row when none).
    pub fn one(&mut self, statement: String) -> influxql::Result<Row> {
        let r = self.result(&statement)?;
        Ok(r.series
            .into_iter()
            .next()
            .map(|mut s| Row {
                cells: if s.values.is_empty() {
                    Vec::new()
                } else {
                    s.values.swap_remove(0)
                },
                columns: s.columns,
            })
            .unwrap_or(Row {
                columns: Vec::new(),
                cells: Vec::new(),
            }))
    }

    fn result(&mut self, statement: &str) -> influxql::Result<StatementResult> {
        // The named questions are the app's own, bounded by their windows:
        // no time or row limit beyond the defaults.
        let limits = Limits::default();
        let mut results = influxql::run_with(
            self.snap,
            statement,
            influxql::now_ns(),
            &limits,
            &mut self.access,
        )?;
        match results.len() {
            1 => results.swap_remove(0),
            n => Err(influxql::Error::Plan(format!(
                "{n} results for one statement: {statement}"
            ))),
        }
    }
}
