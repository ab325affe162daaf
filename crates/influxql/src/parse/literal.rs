//! Literals: strings, integers, floats and durations (`80s`, `1700000000s`).

use std::fmt;

use nom::branch::alt;
use nom::character::complete::{char, digit1};
use nom::combinator::{opt, recognize};
use nom::sequence::pair;

use super::common::{fail_at, is_ident_char, ws, PResult};
use super::identifier::quoted_body;

/// Nanoseconds per unit suffix, longest suffixes first so `ms` wins over `m`.
const UNITS: &[(&str, i128)] = &[
    ("ns", 1),
    ("ms", 1_000_000),
    ("u", 1_000),
    ("µ", 1_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
    ("w", 604_800_000_000_000),
];

/// A duration in nanoseconds; prints with the largest unit that divides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Duration(pub i64);

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = i128::from(self.0);
        let best = ["w", "d", "h", "m", "s", "ms", "u", "ns"]
            .iter()
            .filter_map(|u| UNITS.iter().find(|(n, _)| n == u))
            .find(|(_, per)| ns % per == 0)
            .copied()
            .unwrap_or(("ns", 1));
        write!(f, "{}{}", ns / best.1, best.0)
    }
}

/// A literal value.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `'text'`.
    String(String),
    /// An integer, possibly negative.
    Integer(i128),
    /// A number with a fractional part.
    Float(f64),
    /// An integer with a unit suffix.
    Duration(Duration),
    /// `/pattern/`: a regular expression (RE2 syntax, as InfluxDB's Go
    /// `regexp`), kept as written with `\/` read as `/`.
    Regex(String),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::String(s) => {
                f.write_str("'")?;
                for c in s.chars() {
                    match c {
                        '\'' => f.write_str("\\'")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("'")
            }
            Literal::Integer(v) => write!(f, "{v}"),
            Literal::Float(v) => {
                // Rust prints the shortest text that reads back to the same
                // double, never in exponent form; keep a point so it stays a float.
                let s = format!("{v}");
                if s.contains('.') || !v.is_finite() {
                    f.write_str(&s)
                } else {
                    write!(f, "{s}.0")
                }
            }
            Literal::Duration(d) => write!(f, "{d}"),
            Literal::Regex(r) => {
                f.write_str("/")?;
                for c in r.chars() {
                    match c {
                        '/' => f.write_str("\\/")?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("/")
            }
        }
    }
}

/// A number (integer, float or duration), optionally signed.
pub fn number(i: &str) -> PResult<'_, Literal> {
    let (i, _) = ws(i)?;
    let start = i;
    let (i, neg) = opt(char('-'))(i)?;
    let (rest, text) = recognize(pair(digit1, opt(pair(char('.'), digit1))))(i)?;
    let sign: i128 = if neg.is_some() { -1 } else { 1 };
    if text.contains('.') {
        let v = match text.parse::<f64>() {
            Ok(v) if v.is_finite() => v,
            _ => return fail_at(start, "a number that fits a 64-bit float"),
        };
        return Ok((rest, Literal::Float(v * sign as f64)));
    }
    let Ok(v) = text.parse::<i128>() else {
        return fail_at(start, "an integer that fits 64 bits");
    };
    if v > i128::from(u64::MAX) {
        return fail_at(start, "an integer that fits 64 bits");
    }
    for (unit, per) in UNITS {
        if let Some(after) = rest.strip_prefix(unit) {
            if after.starts_with(is_ident_char) {
                continue;
            }
            let ns = v * per * sign;
            return match i64::try_from(ns) {
                Ok(ns) => Ok((after, Literal::Duration(Duration(ns)))),
                Err(_) => fail_at(start, "a duration that fits 64-bit nanoseconds"),
            };
        }
    }
    if rest.starts_with(is_ident_char) {
        return fail_at(
            start,
            "a number or a duration unit (ns, u, ms, s, m, h, d, w)",
        );
    }
    Ok((rest, Literal::Integer(v * sign)))
}

/// A duration literal (`1s`, `10ms`).
pub fn duration(i: &str) -> PResult<'_, Duration> {
    match number(i)? {
        (rest, Literal::Duration(d)) => Ok((rest, d)),
        _ => Err(nom::Err::Error(super::common::Fail {
            input: i,
            expected: None,
            bound: None,
        })),
    }
}

/// A single-quoted string.
pub fn string(i: &str) -> PResult<'_, String> {
    let (i, _) = ws(i)?;
    quoted_body('\'')(i)
}

/// `/pattern/`; `\/` stands for `/`, every other escape is the pattern's.
pub fn regex(i: &str) -> PResult<'_, String> {
    let (i, _) = ws(i)?;
    let Some(body) = i.strip_prefix('/') else {
        return Err(nom::Err::Error(super::common::Fail {
            input: i,
            expected: None,
            bound: None,
        }));
    };
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '/' => return Ok((&body[k + 1..], out)),
            '\\' => match chars.next() {
                Some((_, '/')) => out.push('/'),
                Some((_, d)) => {
                    out.push('\\');
                    out.push(d);
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    fail_at(i, "a regular expression closed by '/'")
}

/// Any literal.
pub fn literal(i: &str) -> PResult<'_, Literal> {
    alt((
        number,
        |i| string(i).map(|(r, s)| (r, Literal::String(s))),
        |i| regex(i).map(|(r, s)| (r, Literal::Regex(s))),
    ))(i)
}

/// A non-negative integer without unit (`LIMIT 10`).
pub fn unsigned(i: &str) -> PResult<'_, u64> {
    let (i, _) = ws(i)?;
    let (rest, d) = digit1(i)?;
    match d.parse::<u64>() {
        Ok(v) if !rest.starts_with(is_ident_char) => Ok((rest, v)),
        _ => fail_at(i, "a non-negative integer"),
    }
}
