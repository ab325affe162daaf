//! A statement of the subset and the `;`-separated list a query holds.

use std::fmt;

use super::common::{found, token, ws, Fail};
use super::depth::{Depth, TextLimits};
use super::select::{select, SelectStatement};
use super::show::{show, ShowStatement};
use crate::error::{Error, Result};

/// One statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `SELECT …`.
    Select(Box<SelectStatement>),
    /// `SHOW …`.
    Show(ShowStatement),
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Select(s) => write!(f, "{s}"),
            Statement::Show(s) => write!(f, "{s}"),
        }
    }
}

fn to_error(full: &str, f: Fail<'_>) -> Error {
    let pos = full.len() - f.input.len();
    let message = match (f.bound, f.expected) {
        (Some(bound), _) => bound,
        (None, Some(e)) => format!("expected {e}, found {}", found(f.input)),
        (None, None) => format!("unexpected {}", found(f.input)),
    };
    Error::Parse { pos, message }
}

/// Parses every `;`-separated statement of `text` (a trailing `;` is
/// allowed) within the default [`TextLimits`] and [`MAX_DEPTH`](super::depth::MAX_DEPTH).
/// The first error stops parsing and carries its byte position.
pub fn parse_statements(text: &str) -> Result<Vec<Statement>> {
    parse_statements_within(text, &TextLimits::default())
}

/// [`parse_statements`] within `limits`: a longer text is refused before
/// parsing starts, one statement too many as soon as it begins, each
/// naming the limit.
pub fn parse_statements_within(text: &str, limits: &TextLimits) -> Result<Vec<Statement>> {
    if text.len() > limits.max_bytes {
        return Err(Error::Parse {
            pos: limits.max_bytes,
            message: format!(
                "query of {} bytes is longer than the limit of {} bytes",
                text.len(),
                limits.max_bytes
            ),
        });
    }
    // InfluxDB's scanner reads NUL as the end of the text; refuse it by
    // name rather than parse something the client did not mean.
    if let Some(pos) = text.find('\0') {
        return Err(Error::Parse {
            pos,
            message: "a NUL character, which a query may not contain".into(),
        });
    }
    let mut out = Vec::new();
    let mut i = text;
    loop {
        let rest = ws(i).map(|(r, _)| r).unwrap_or(i);
        if rest.is_empty() {
            if out.is_empty() {
                return Err(Error::Parse {
                    pos: text.len() - rest.len(),
                    message: "empty query".into(),
                });
            }
            return Ok(out);
        }
        if out.len() >= limits.max_statements {
            return Err(Error::Parse {
                pos: text.len() - rest.len(),
                message: format!(
                    "more than {} statements in one query (the limit)",
                    limits.max_statements
                ),
            });
        }
        let parsed = match select(rest, Depth::top()) {
            Ok((r, s)) => Ok((r, Statement::Select(Box::new(s)))),
            Err(nom::Err::Failure(f)) => Err(f),
            Err(_) => match show(rest) {
                Ok((r, s)) => Ok((r, Statement::Show(s))),
                Err(nom::Err::Failure(f)) => Err(f),
                Err(_) => Err(Fail {
                    input: rest,
                    expected: Some("SELECT or SHOW".into()),
                    bound: None,
                }),
            },
        };
        let (r, stmt) = parsed.map_err(|f| to_error(text, f))?;
        out.push(stmt);
        let r = ws(r).map(|(x, _)| x).unwrap_or(r);
        if r.is_empty() {
            return Ok(out);
        }
        match token(";")(r) {
            Ok((r, _)) => i = r,
            Err(_) => {
                return Err(to_error(
                    text,
                    Fail {
                        input: r,
                        expected: Some("';' or the end of the statement".into()),
                        bound: None,
                    },
                ))
            }
        }
    }
}

/// Parses exactly one statement.
pub fn parse_statement(text: &str) -> Result<Statement> {
    let mut v = parse_statements(text)?;
    if v.len() != 1 {
        return Err(Error::Parse {
            pos: 0,
            message: format!("expected one statement, found {}", v.len()),
        });
    }
    Ok(v.remove(0))
}
