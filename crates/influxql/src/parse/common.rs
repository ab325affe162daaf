//! Shared parsing pieces: the error carrier, whitespace, keywords and
//! "expected X" failures that keep the position of the offending token.

use nom::bytes::complete::{tag, tag_no_case};
use nom::character::complete::multispace0;
use nom::error::{ErrorKind, ParseError};
use nom::IResult;

/// A nom error that remembers where parsing stopped and, once a parser
/// has committed, what it expected there.
#[derive(Debug, Clone, PartialEq)]
pub struct Fail<'a> {
    /// The input left where the failure happened.
    pub input: &'a str,
    /// What was expected; `None` for a plain backtracking miss.
    pub expected: Option<String>,
    /// A bound of the parser was hit (see [`super::depth`]): the whole
    /// message, reported as it is instead of "expected …".
    pub bound: Option<String>,
}

impl<'a> ParseError<&'a str> for Fail<'a> {
    fn from_error_kind(input: &'a str, _: ErrorKind) -> Self {
        Fail {
            input,
            expected: None,
            bound: None,
        }
    }

    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }

    fn or(self, other: Self) -> Self {
        // Report the alternative that got furthest; it is the likeliest intent.
        if other.input.len() <= self.input.len() {
            other
        } else {
            self
        }
    }
}

/// Result of every parser in this crate.
pub type PResult<'a, T> = IResult<&'a str, T, Fail<'a>>;

/// Skips whitespace.
pub fn ws(i: &str) -> PResult<'_, ()> {
    let (i, _) = multispace0(i)?;
    Ok((i, ()))
}

/// Whether `c` may continue an unquoted identifier or keyword.
pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A case-insensitive keyword (after optional whitespace) that is not the
/// prefix of a longer word.
pub fn keyword<'a>(kw: &'static str) -> impl FnMut(&'a str) -> PResult<'a, &'a str> {
    move |i: &'a str| {
        let (i, _) = ws(i)?;
        let (rest, k) = tag_no_case(kw)(i)?;
        if rest.starts_with(is_ident_char) {
            return Err(nom::Err::Error(Fail::from_error_kind(i, ErrorKind::Tag)));
        }
        Ok((rest, k))
    }
}

/// Punctuation `t` after optional whitespace.
pub fn token<'a>(t: &'static str) -> impl FnMut(&'a str) -> PResult<'a, &'a str> {
    move |i: &'a str| {
        let (i, _) = ws(i)?;
        tag(t)(i)
    }
}

/// Runs `p`; if it fails without committing, fails for good at the current
/// token with "expected `what`".
pub fn expect<'a, T>(
    what: &'static str,
    mut p: impl FnMut(&'a str) -> PResult<'a, T>,
) -> impl FnMut(&'a str) -> PResult<'a, T> {
    move |i: &'a str| {
        let at = ws(i).map(|(r, _)| r).unwrap_or(i);
        match p(i) {
            Err(nom::Err::Error(_)) => Err(nom::Err::Failure(Fail {
                input: at,
                expected: Some(what.to_string()),
                bound: None,
            })),
            other => other,
        }
    }
}

/// A committed failure at `input` with a message of its own.
pub fn fail_at<T>(input: &str, message: impl Into<String>) -> PResult<'_, T> {
    Err(nom::Err::Failure(Fail {
        input: input.trim_start(),
        expected: Some(message.into()),
        bound: None,
    }))
}

/// The token at the start of `rest`, for "found …" in messages.
pub fn found(rest: &str) -> String {
    let rest = rest.trim_start();
    if rest.is_empty() {
        return "end of input".into();
    }
    let end = rest
        .char_indices()
        .find(|&(k, c)| k > 0 && (c.is_whitespace() || !is_ident_char(c)))
        .map_or(rest.len(), |(k, _)| k);
    format!("{:?}", &rest[..end])
}
