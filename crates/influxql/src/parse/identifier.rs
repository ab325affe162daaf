//! Identifiers: measurement, tag and field names, bare or double-quoted.

use std::fmt;

use nom::branch::alt;
use nom::bytes::complete::take_while;
use nom::character::complete::{anychar, char, satisfy};
use nom::combinator::{recognize, verify};
use nom::sequence::pair;

use super::common::{is_ident_char, ws, PResult};

/// Words that cannot be bare identifiers; quote them (`"limit"`) to use them as names.
pub const RESERVED: &[&str] = &[
    "ALL",
    "AND",
    "AS",
    "ASC",
    "BY",
    "DATABASES",
    "DESC",
    "FIELD",
    "FILL",
    "FROM",
    "GROUP",
    "IN",
    "INTO",
    "KEY",
    "KEYS",
    "LIMIT",
    "MEASUREMENTS",
    "OFFSET",
    "OR",
    "ORDER",
    "SELECT",
    "SHOW",
    "SLIMIT",
    "SOFFSET",
    "TAG",
    "VALUES",
    "WHERE",
    "WITH",
];

/// A name. Prints bare when it can, else double-quoted with escapes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident(pub String);

impl Ident {
    /// The name as written without quotes.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn is_bare(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && cs.all(is_ident_char)
        && !RESERVED.iter().any(|k| k.eq_ignore_ascii_case(s))
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if is_bare(&self.0) {
            return f.write_str(&self.0);
        }
        f.write_str("\"")?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                c => write!(f, "{c}")?,
            }
        }
        f.write_str("\"")
    }
}

fn bare(i: &str) -> PResult<'_, Ident> {
    let (rest, s) = verify(
        recognize(pair(
            satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
            take_while(is_ident_char),
        )),
        |s: &str| !RESERVED.iter().any(|k| k.eq_ignore_ascii_case(s)),
    )(i)?;
    Ok((rest, Ident(s.to_string())))
}

/// Body of a quoted string or identifier up to the closing `quote`, with
/// `\\`, `\n` and `\<quote>` escapes.
pub fn quoted_body(quote: char) -> impl FnMut(&str) -> PResult<'_, String> {
    move |i: &str| {
        let (mut i, _) = char(quote)(i)?;
        let mut out = String::new();
        loop {
            let (rest, c) = anychar(i)?;
            match c {
                c if c == quote => return Ok((rest, out)),
                '\\' => {
                    let (rest, e) = anychar(rest)?;
                    out.push(match e {
                        'n' => '\n',
                        e => e,
                    });
                    i = rest;
                }
                c => {
                    out.push(c);
                    i = rest;
                }
            }
        }
    }
}

fn quoted(i: &str) -> PResult<'_, Ident> {
    let (rest, s) = quoted_body('"')(i)?;
    Ok((rest, Ident(s)))
}

/// An identifier after optional whitespace.
pub fn identifier(i: &str) -> PResult<'_, Ident> {
    let (i, _) = ws(i)?;
    alt((quoted, bare))(i)
}
