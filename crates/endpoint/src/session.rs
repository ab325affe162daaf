//! The version-2 side of a connection: the HELLO check (token), the answer
//! (WELCOME or REFUSE), the series references a sender declares, and the
//! per-sender sequence numbers of its data frames.

use std::collections::HashMap;
use std::sync::Arc;

use telemetry::model::Series;
use telemetry::wire::{Hello, SeriesTags};

/// Most series references one connection may declare.
pub const MAX_SERIES_REFS: usize = 1 << 16;

/// What records of one series reference of one sender get: added tags
/// (`host` from the HELLO and the SERIES frame's tags) and the time rule.
#[derive(Debug)]
pub struct SeriesContext {
    /// Added tags, sorted by key.
    pub tags: Vec<(&'static str, String)>,
    /// A hash of the tags: the ingest side's map key for this tag set.
    pub key: u64,
    /// Record times are wall-clock µs since the Unix epoch, stored as they are.
    pub wall_clock: bool,
    /// The sender's stable id (from its HELLO).
    pub sender_id: u64,
    /// The sender wants acknowledgements (and resends what was not
    /// acknowledged: the ingest side recognises records stored before a
    /// restart).
    pub acked: bool,
}

impl SeriesContext {
    fn new(tags: Vec<(&'static str, String)>, hello: &Hello) -> SeriesContext {
        let pairs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
        SeriesContext {
            key: telemetry::source::with_tags("", &pairs),
            tags,
            wall_clock: hello.wall_clock(),
            sender_id: hello.sender_id,
            acked: hello.flags & telemetry::wire::control::HELLO_ACKS_WANTED != 0,
        }
    }

    /// The source id of the plain source `base_tag` (`syscall/17`) under
    /// these tags.
    pub fn source_id(&self, base_tag: &str) -> u64 {
        let pairs: Vec<(&str, &str)> = self.tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
        telemetry::source::with_tags(base_tag, &pairs)
    }

    /// `series` with these tags added.
    pub fn series(&self, series: Series) -> Series {
        series.with_tags(&self.tags)
    }
}

/// Compares a presented token with the expected one in time that does not
/// depend on where they differ.
pub fn token_matches(presented: &str, expected: &str) -> bool {
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    let mut diff = (a.len() != b.len()) as u8;
    for (i, &expected_byte) in b.iter().enumerate() {
        diff |= a.get(i).copied().unwrap_or(0) ^ expected_byte;
    }
    diff == 0
}

/// An accepted version-2 sender on one connection.
pub struct Session {
    /// Its HELLO.
    pub hello: Hello,
    untagged: Arc<SeriesContext>,
    refs: HashMap<u32, Arc<SeriesContext>>,
    last_seq: u64,
    /// The receiver acknowledges this sender's frames (see [`crate::acks`]).
    pub acked: bool,
}

impl Session {
    /// A session for an accepted HELLO.
    pub fn new(hello: Hello) -> Session {
        let untagged = Arc::new(SeriesContext::new(
            vec![("host", hello.host.clone())],
            &hello,
        ));
        let last_seq = hello.next_seq.saturating_sub(1);
        Session {
            hello,
            untagged,
            refs: HashMap::new(),
            last_seq,
            acked: false,
        }
    }

    /// Declares a series reference; an error (closing the connection)
    /// when the reference was declared before with other tags or too many
    /// references were declared.
    pub fn declare(&mut self, s: SeriesTags) -> Result<(), String> {
        let mut tags = s.tags;
        tags.push(("host", self.hello.host.clone()));
        tags.sort_by(|a, b| a.0.cmp(b.0));
        if let Some(old) = self.refs.get(&s.series_ref) {
            return if old.tags == tags {
                Ok(())
            } else {
                Err(format!(
                    "series reference {} declared again with other tags",
                    s.series_ref
                ))
            };
        }
        if self.refs.len() >= MAX_SERIES_REFS {
            return Err(format!("more than {MAX_SERIES_REFS} series references"));
        }
        let ctx = Arc::new(SeriesContext::new(tags, &self.hello));
        self.refs.insert(s.series_ref, ctx);
        Ok(())
    }

    /// The context of a data frame with sequence number `seq` naming
    /// `series_ref`; an error when the sequence does not increase or the
    /// reference was not declared.
    pub fn data(&mut self, seq: u64, series_ref: u32) -> Result<Arc<SeriesContext>, String> {
        if seq <= self.last_seq {
            return Err(format!(
                "data frame sequence number {seq} does not follow {}",
                self.last_seq
            ));
        }
        let ctx = match series_ref {
            0 => self.untagged.clone(),
            r => self
                .refs
                .get(&r)
                .cloned()
                .ok_or_else(|| format!("data frame names undeclared series reference {r}"))?,
        };
        self.last_seq = seq;
        Ok(ctx)
    }

    /// The last data frame's sequence number.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            sender_id: 1,
            flags: 0,
            next_seq: 5,
            token: String::new(),
            host: "h1".into(),
            agent: "t".into(),
        }
    }

    #[test]
    fn sequences_increase_and_refs_must_be_declared_once() {
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abd", "abc"));
        assert!(!token_matches("ab", "abc"));
        assert!(!token_matches("abcd", "abc"));
        let mut s = Session::new(hello());
        assert!(s.data(4, 0).is_err());
        let c = s.data(5, 0).unwrap();
        assert_eq!(c.tags, vec![("host", "h1".to_string())]);
        assert!(s.data(5, 0).is_err());
        assert!(s.data(6, 1).is_err());
        s.declare(SeriesTags::new(1, &[("comm", "pg")]).unwrap())
            .unwrap();
        s.declare(SeriesTags::new(1, &[("comm", "pg")]).unwrap())
            .unwrap();
        assert!(s
            .declare(SeriesTags::new(1, &[("comm", "x")]).unwrap())
            .is_err());
        let c = s.data(9, 1).unwrap();
        assert_eq!(
            c.tags,
            vec![("comm", "pg".to_string()), ("host", "h1".to_string())]
        );
        assert_eq!(
            c.source_id("syscall/17"),
            telemetry::source::with_tags("syscall/17", &[("comm", "pg"), ("host", "h1")])
        );
        assert_eq!(s.last_seq(), 9);
    }
}
