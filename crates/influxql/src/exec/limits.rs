//! Per-query bounds that keep one query from starving ingest or memory.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::parse::TextLimits;

/// Bounds of one query.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Stop with an error after this instant.
    pub deadline: Option<Instant>,
    /// Most rows a statement may return (per statement, all series).
    pub max_rows: usize,
    /// Bounds on the query's text (length, statement count), checked
    /// while parsing; nesting depth has a fixed bound,
    /// [`MAX_DEPTH`](crate::parse::MAX_DEPTH).
    pub text: TextLimits,
    /// Threads one statement's `GROUP BY time` buckets are answered on
    /// (the statement's own and `threads − 1` lower-priority helpers).
    pub threads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: None,
            max_rows: 1_000_000,
            text: TextLimits::default(),
            threads: 1,
        }
    }
}

impl Limits {
    /// Fails once the deadline has passed.
    pub fn check(&self) -> Result<()> {
        match self.deadline {
            Some(d) if Instant::now() > d => Err(Error::Limit(
                "query timeout: the query ran longer than the server's per-query time limit".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Fails when `rows` exceeds the row limit.
    pub fn rows(&self, rows: usize) -> Result<()> {
        if rows > self.max_rows {
            return Err(Error::Limit(format!(
                "the result exceeds the server's row limit of {} rows; narrow the time range or add LIMIT",
                self.max_rows
            )));
        }
        Ok(())
    }
}

/// Checks the deadline every few thousand records from inside an engine
/// callback, which cannot stop the scan: once expired, the rest of the
/// scan skips its work and the caller reports the timeout.
pub struct Ticker<'a> {
    limits: &'a Limits,
    n: u32,
    /// True once the deadline passed.
    pub expired: bool,
}

impl<'a> Ticker<'a> {
    /// A ticker for `limits`.
    pub fn new(limits: &'a Limits) -> Self {
        Ticker {
            limits,
            n: 0,
            expired: false,
        }
    }

    /// Call once per record; false once the deadline has passed.
    #[inline]
    pub fn tick(&mut self) -> bool {
        if self.expired {
            return false;
        }
        self.n = self.n.wrapping_add(1);
        if self.n.is_multiple_of(8192) && self.limits.check().is_err() {
            self.expired = true;
        }
        !self.expired
    }

    /// The timeout error if the deadline passed during the scan.
    pub fn result(&self) -> Result<()> {
        if self.expired {
            self.limits.check()
        } else {
            Ok(())
        }
    }
}
