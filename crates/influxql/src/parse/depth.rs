//! Bounds on what one query's text may ask of the parser and of every walk
//! over the syntax tree after it: nesting depth, statement count, length.
//!
//! Walks over the syntax tree are recursive (the planner's, `Display`,
//! drop, clone), and a recursive-descent parser costs stack per level too;
//! a stack overflow aborts the whole process (it cannot be caught). So the
//! depth is bounded where the tree is built: every rule that nests takes a
//! [`Depth`] and calls [`Depth::enter`] before going a level deeper, which
//! refuses, at the offending token, a statement nested deeper than
//! [`MAX_DEPTH`]. Chains (`a AND b AND …`, `now() - 1h + 5m …`) are one
//! wide node, not a left-leaning tree, so their length costs no depth; only
//! nesting does (parentheses today; function calls and subqueries when the
//! grammar grows them: give those rules a `Depth` too). WHERE conditions
//! are parsed without recursion (open parentheses are a stack on the
//! heap), so parsing itself uses the same stack at any depth.
//!
//! [`MAX_DEPTH`] sits far below what the smallest stack running queries
//! holds: `examples/stack_per_level.rs` measures the stack one level costs
//! (parse, plan, print, drop) in the build at hand — in a debug build the
//! full depth needs at most 72 KiB, 28 times under 2 MiB; a recursive
//! nom parser had cost 9 KB per level there — and `tests/hostile.rs` runs a
//! statement of the full depth on a quarter of [`SMALLEST_QUERY_STACK`].
//! A rule added by recursive descent adds its frames per level: measure
//! again with the example before raising the bound.

use super::common::{Fail, PResult};

/// Deepest nesting a statement may have: parentheses within parentheses
/// (and, as the grammar grows, calls within calls, subqueries). Written
/// queries nest a handful of levels; dashboards' generated ones, a few tens.
pub const MAX_DEPTH: usize = 100;

/// The smallest stack any thread running queries has, in bytes: Rust's
/// default for spawned threads (test threads, the HTTP API's query threads,
/// which set it explicitly). The main thread of a binary has 8 MiB.
pub const SMALLEST_QUERY_STACK: usize = 2 << 20;

/// Bounds on one query's text; `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLimits {
    /// Longest query text, in bytes (all statements together).
    pub max_bytes: usize,
    /// Most `;`-separated statements in one query.
    pub max_statements: usize,
}

impl Default for TextLimits {
    fn default() -> Self {
        TextLimits {
            max_bytes: 256 << 10,
            max_statements: 1000,
        }
    }
}

/// How deep the rule being parsed sits in the statement's tree. `Copy`:
/// each recursive call gets the deeper value, and returning restores the
/// caller's, so no state is left behind after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Depth {
    level: usize,
    max: usize,
}

impl Depth {
    /// The top of a statement, bounded by [`MAX_DEPTH`].
    pub fn top() -> Depth {
        Depth::with_max(MAX_DEPTH)
    }

    /// The top of a statement with a bound of `max` levels (at most
    /// [`MAX_DEPTH`]: a larger bound would not be stack-safe).
    pub fn with_max(max: usize) -> Depth {
        Depth {
            level: 0,
            max: max.min(MAX_DEPTH),
        }
    }

    /// Levels entered so far.
    pub fn level(self) -> usize {
        self.level
    }

    /// One level deeper, for a rule that starts at `at`; past the bound, a
    /// committed failure at `at` that names the bound.
    pub fn enter<'a>(self, at: &'a str) -> Result<Depth, nom::Err<Fail<'a>>> {
        if self.level >= self.max {
            return Err(nom::Err::Failure(Fail {
                input: at.trim_start(),
                expected: None,
                bound: Some(format!(
                    "statement nested deeper than {} levels (the limit on parentheses, \
                     function calls and subqueries within each other)",
                    self.max
                )),
            }));
        }
        Ok(Depth {
            level: self.level + 1,
            max: self.max,
        })
    }

    /// Runs `p` one level deeper (see [`Depth::enter`]).
    pub fn nest<'a, T>(
        self,
        i: &'a str,
        p: impl FnOnce(&'a str, Depth) -> PResult<'a, T>,
    ) -> PResult<'a, T> {
        let d = self.enter(i)?;
        p(i, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_refuses_past_the_bound_and_names_it() {
        let mut d = Depth::with_max(3);
        for _ in 0..3 {
            d = d.enter("x").expect("within the bound");
        }
        assert_eq!(d.level(), 3);
        match d.enter("  (y") {
            Err(nom::Err::Failure(f)) => {
                assert_eq!(f.input, "(y");
                assert!(f.bound.is_some_and(|m| m.contains("deeper than 3 levels")));
            }
            other => panic!("expected a committed failure, got {other:?}"),
        }
        assert_eq!(Depth::with_max(usize::MAX).max, MAX_DEPTH);
    }
}
