//! Regular expressions of `=~` / `!~` (RE2 syntax, as InfluxDB's Go
//! `regexp`), compiled with bounded size.
//!
//! The `regex` crate matches in time linear in the text whatever the
//! pattern (no backtracking), so a "catastrophic" pattern costs what any
//! other does; what a hostile pattern can still grow is the compiled
//! program (huge alternations, `a{1000}{1000}`), which the size limits
//! refuse at plan time. Tag patterns are matched once per series while
//! planning, never per record, so they never touch ingest.

use crate::error::{Error, Result};

/// Largest compiled program and lazy-DFA cache per pattern, bytes.
pub const MAX_REGEX_BYTES: usize = 1 << 20;

/// A compiled pattern; equal when written the same.
#[derive(Debug, Clone)]
pub struct Pattern(pub regex::Regex);

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Eq for Pattern {}

impl Pattern {
    /// Compiles `p`; a pattern that does not parse or compiles larger than
    /// [`MAX_REGEX_BYTES`] is a plan error naming it.
    pub fn compile(p: &str) -> Result<Pattern> {
        regex::RegexBuilder::new(p)
            .size_limit(MAX_REGEX_BYTES)
            .dfa_size_limit(MAX_REGEX_BYTES)
            .build()
            .map(Pattern)
            .map_err(|e| {
                let shown: String = p.chars().take(80).collect();
                Error::Plan(format!("regular expression /{shown}/ refused: {e}"))
            })
    }

    /// Whether the pattern matches anywhere in `s` (InfluxDB's `=~`).
    pub fn is_match(&self, s: &str) -> bool {
        self.0.is_match(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_patterns_are_bounded() {
        // Nested repetition that backtracking engines take exponential
        // time on: linear here.
        let p = Pattern::compile("^(a+)+$").expect("compiles");
        let text = format!("{}b", "a".repeat(100_000));
        let t = std::time::Instant::now();
        assert!(!p.is_match(&text));
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        // Programs too large are refused with a message.
        for big in [
            "a{1000}{1000}",
            &format!(
                "({})",
                (0..200_000)
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join("|")
            ),
        ] {
            let e = Pattern::compile(big).expect_err("too large");
            assert!(e.to_string().contains("refused"), "{e}");
        }
        assert!(Pattern::compile("(").is_err());
        assert!(Pattern::compile("^(db-1|db-3)$")
            .is_ok_and(|p| p.is_match("db-3") && !p.is_match("db-30")));
    }
}
