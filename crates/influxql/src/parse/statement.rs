//! A statement of the subset and the `;`-separated list a query holds.

use std::fmt;

use super::common::{found, token, ws, Fail};
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
    let message = match f.expected {
        Some(e) => format!("expected {e}, found {}", found(f.input)),
        None => format!("unexpected {}", found(f.input)),
    };
    Error::Parse { pos, message }
}

/// Parses every `;`-separated statement of `text` (a trailing `;` is
/// allowed). The first error stops parsing and carries its byte position.
pub fn parse_statements(text: &str) -> Result<Vec<Statement>> {
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
        let parsed = match select(rest) {
            Ok((r, s)) => Ok((r, Statement::Select(Box::new(s)))),
            Err(nom::Err::Failure(f)) => Err(f),
            Err(_) => match show(rest) {
                Ok((r, s)) => Ok((r, Statement::Show(s))),
                Err(nom::Err::Failure(f)) => Err(f),
                Err(_) => Err(Fail {
                    input: rest,
                    expected: Some("SELECT or SHOW".into()),
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
