//! The one machine-readable result line of a run.

use std::fmt;

/// Result of one run; its `Display` form is the stable stdout line
/// `db=<db> threads=<t> size=<bytes> records/s=<x> MB/s=<y>`
/// (MB/s counts payload bytes only, 1 MB = 10^6 bytes).
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
        }
    }

    /// Parses a line printed by `Display`; `None` if it is not one.
    pub fn parse(line: &str) -> Option<Summary> {
        let mut db = None;
        let mut threads = None;
        let mut size = None;
        let mut rps = None;
        let mut mbps = None;
        for field in line.split_whitespace() {
            let (k, v) = field.split_once('=')?;
            match k {
                "db" => db = Some(v.to_string()),
                "threads" => threads = v.parse().ok(),
                "size" => size = v.parse().ok(),
                "records/s" => rps = v.parse().ok(),
                "MB/s" => mbps = v.parse().ok(),
                _ => return None,
            }
        }
        Some(Summary {
            db: db?,
            threads: threads?,
            size: size?,
            records_per_s: rps?,
            mb_per_s: mbps?,
        })
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "db={} threads={} size={} records/s={:.0} MB/s={:.2}",
            self.db, self.threads, self.size, self.records_per_s, self.mb_per_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_round_trips() {
        let s = Summary::from_count("rocksdb", 2, 64, 3_000_000, 2.0);
        let line = s.to_string();
        assert_eq!(
            line,
            "db=rocksdb threads=2 size=64 records/s=1500000 MB/s=96.00"
        );
        assert_eq!(Summary::parse(&line), Some(s));
    }

    #[test]
    fn rejects_other_lines() {
        assert_eq!(Summary::parse("[ingest-scaling] records/s=5"), None);
        assert_eq!(Summary::parse("db=file threads=1 size=8"), None);
    }
}
