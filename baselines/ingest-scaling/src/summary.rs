//! The one machine-readable result line of a run.

use std::fmt;

/// Result of one run; its `Display` form is the stable stdout line
/// `db=<db> threads=<t> size=<bytes> records/s=<x> MB/s=<y> close_s=<c>`
/// (MB/s counts payload bytes only, 1 MB = 10^6 bytes; `close_s` is the time
/// closing the store took after the timed part, not in records/s; older
/// lines without it parse with `close_s` 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// `loom`, `loom-index`, `lmdb`, `rocksdb` or `file`.
    pub db: String,
    /// Writer threads.
    pub threads: usize,
    /// Payload bytes per record.
    pub size: usize,
    /// Records written per second of the measured interval.
    pub records_per_s: f64,
    /// Payload megabytes (10^6 B) written per second.
    pub mb_per_s: f64,
    /// Seconds closing the store took after the timed part.
    pub close_s: f64,
}

impl Summary {
    /// Builds the summary from a record count over `secs` seconds.
    pub fn from_count(db: &str, threads: usize, size: usize, records: u64, secs: f64) -> Self {
        let records_per_s = if secs > 0.0 {
            records as f64 / secs
        } else {
            0.0
        };
        Summary {
            db: db.to_string(),
            threads,
            size,
            records_per_s,
            mb_per_s: records_per_s * size as f64 / 1e6,
            close_s: 0.0,
        }
    }

    /// The summary with the store's close time.
    pub fn with_close(mut self, close_s: f64) -> Self {
        self.close_s = close_s;
        self
    }

    /// Parses a line printed by `Display`; `None` if it is not one.
    pub fn parse(line: &str) -> Option<Summary> {
        let mut db = None;
        let mut threads = None;
        let mut size = None;
        let mut rps = None;
        let mut mbps = None;
        let mut close_s = 0.0;
        for field in line.split_whitespace() {
            let (k, v) = field.split_once('=')?;
            match k {
                "db" => db = Some(v.to_string()),
                "threads" => threads = v.parse().ok(),
                "size" => size = v.parse().ok(),
                "records/s" => rps = v.parse().ok(),
                "MB/s" => mbps = v.parse().ok(),
                "close_s" => close_s = v.parse().ok()?,
                _ => return None,
            }
        }
        Some(Summary {
            db: db?,
            threads: threads?,
            size: size?,
            records_per_s: rps?,
            mb_per_s: mbps?,
            close_s,
        })
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "db={} threads={} size={} records/s={:.0} MB/s={:.2} close_s={:.3}",
            self.db, self.threads, self.size, self.records_per_s, self.mb_per_s, self.close_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_round_trips() {
        let s = Summary::from_count("rocksdb", 2, 64, 3_000_000, 2.0).with_close(0.25);
        let line = s.to_string();
        assert_eq!(
            line,
            "db=rocksdb threads=2 size=64 records/s=1500000 MB/s=96.00 close_s=0.250"
        );
        assert_eq!(Summary::parse(&line), Some(s));
        let old = Summary::parse("db=file threads=1 size=8 records/s=10 MB/s=0.00").unwrap();
        assert_eq!(old.close_s, 0.0);
    }

    #[test]
    fn rejects_other_lines() {
        assert_eq!(Summary::parse("[ingest-scaling] records/s=5"), None);
        assert_eq!(Summary::parse("db=file threads=1 size=8"), None);
    }
}
