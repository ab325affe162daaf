//! `SHOW DATABASES`, `SHOW RETENTION POLICIES`, `SHOW MEASUREMENTS`,
//! `SHOW SERIES`, `SHOW TAG KEYS`, `SHOW TAG VALUES` and `SHOW FIELD KEYS`:
//! what Grafana's data-source check and variable editor send.

use std::fmt;

use super::common::{expect, fail_at, keyword, token, PResult};
use super::depth::Depth;
use super::expression::{condition, Condition};
use super::identifier::{identifier, Ident};
use super::literal::{regex, unsigned, Literal};

/// `WITH KEY …` of `SHOW TAG VALUES`.
#[derive(Debug, Clone, PartialEq)]
pub enum KeySelector {
    /// `= k`.
    Equal(Ident),
    /// `!= k`.
    NotEqual(Ident),
    /// `=~ /re/`.
    Regex(String),
    /// `!~ /re/`.
    NotRegex(String),
    /// `IN (k1, k2, …)`.
    In(Vec<Ident>),
}

/// A `SHOW …` statement of the subset.
#[derive(Debug, Clone, PartialEq)]
pub enum ShowStatement {
    /// `SHOW DATABASES`: Loom serves one database.
    Databases,
    /// `SHOW RETENTION POLICIES [ON db]`: the one policy, `autogen`.
    RetentionPolicies {
        /// `ON db`, ignored as every `db`.
        on: Option<Ident>,
    },
    /// `SHOW MEASUREMENTS [WITH MEASUREMENT =~ /re/ | = m] [WHERE …] [LIMIT n]`
    /// (Grafana tests a data source with `LIMIT 1`).
    Measurements {
        /// `WITH MEASUREMENT …`: a regex (`Literal::Regex`) or a name.
        with: Option<(bool, Literal)>,
        /// Tag condition the measurement's series must meet.
        condition: Option<Condition>,
        /// Most names listed.
        limit: Option<u64>,
    },
    /// `SHOW SERIES [FROM m] [WHERE …] [LIMIT n]`.
    Series {
        /// Restrict to one measurement.
        from: Option<Ident>,
        /// Tag condition.
        condition: Option<Condition>,
        /// Most keys listed.
        limit: Option<u64>,
    },
    /// `SHOW TAG KEYS [FROM m] [WHERE …]`.
    TagKeys {
        /// Restrict to one measurement.
        from: Option<Ident>,
        /// Tag condition.
        condition: Option<Condition>,
    },
    /// `SHOW TAG VALUES [FROM m] WITH KEY … [WHERE …] [LIMIT n]`.
    TagValues {
        /// Restrict to one measurement.
        from: Option<Ident>,
        /// The tag keys.
        key: KeySelector,
        /// Tag condition.
        condition: Option<Condition>,
        /// Most values listed per measurement.
        limit: Option<u64>,
    },
    /// `SHOW FIELD KEYS [FROM m]`.
    FieldKeys {
        /// Restrict to one measurement.
        from: Option<Ident>,
    },
}

fn from_clause(i: &str) -> PResult<'_, Option<Ident>> {
    match keyword("FROM")(i) {
        Ok((rest, _)) => {
            let (rest, m) = expect("a measurement name", identifier)(rest)?;
            Ok((rest, Some(m)))
        }
        Err(_) => Ok((i, None)),
    }
}

fn where_clause(i: &str) -> PResult<'_, Option<Condition>> {
    match keyword("WHERE")(i) {
        Ok((rest, _)) => {
            let (rest, c) = expect("a condition", |i| condition(i, Depth::top()))(rest)?;
            Ok((rest, Some(c)))
        }
        Err(_) => Ok((i, None)),
    }
}

fn limit_clause(i: &str) -> PResult<'_, Option<u64>> {
    match keyword("LIMIT")(i) {
        Ok((r, _)) => {
            let (r, n) = expect("a count after LIMIT", unsigned)(r)?;
            Ok((r, Some(n)))
        }
        Err(_) => Ok((i, None)),
    }
}

fn with_from(f: &mut fmt::Formatter<'_>, head: &str, from: &Option<Ident>) -> fmt::Result {
    f.write_str(head)?;
    if let Some(m) = from {
        write!(f, " FROM {m}")?;
    }
    Ok(())
}

fn tail(f: &mut fmt::Formatter<'_>, c: &Option<Condition>, limit: &Option<u64>) -> fmt::Result {
    if let Some(c) = c {
        write!(f, " WHERE {c}")?;
    }
    if let Some(n) = limit {
        write!(f, " LIMIT {n}")?;
    }
    Ok(())
}

impl fmt::Display for ShowStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShowStatement::Databases => f.write_str("SHOW DATABASES"),
            ShowStatement::RetentionPolicies { on } => {
                f.write_str("SHOW RETENTION POLICIES")?;
                if let Some(db) = on {
                    write!(f, " ON {db}")?;
                }
                Ok(())
            }
            ShowStatement::Measurements {
                with,
                condition,
                limit,
            } => {
                f.write_str("SHOW MEASUREMENTS")?;
                if let Some((equal, l)) = with {
                    let op = match (equal, l) {
                        (true, Literal::Regex(_)) => "=~",
                        (false, Literal::Regex(_)) => "!~",
                        (true, _) => "=",
                        (false, _) => "!=",
                    };
                    match l {
                        Literal::String(s) => {
                            write!(f, " WITH MEASUREMENT {op} {}", Ident(s.clone()))?
                        }
                        l => write!(f, " WITH MEASUREMENT {op} {l}")?,
                    }
                }
                tail(f, condition, limit)
            }
            ShowStatement::Series {
                from,
                condition,
                limit,
            } => {
                with_from(f, "SHOW SERIES", from)?;
                tail(f, condition, limit)
            }
            ShowStatement::TagKeys { from, condition } => {
                with_from(f, "SHOW TAG KEYS", from)?;
                tail(f, condition, &None)
            }
            ShowStatement::TagValues {
                from,
                key,
                condition,
                limit,
            } => {
                with_from(f, "SHOW TAG VALUES", from)?;
                match key {
                    KeySelector::Equal(k) => write!(f, " WITH KEY = {k}")?,
                    KeySelector::NotEqual(k) => write!(f, " WITH KEY != {k}")?,
                    KeySelector::Regex(r) => {
                        write!(f, " WITH KEY =~ {}", Literal::Regex(r.clone()))?
                    }
                    KeySelector::NotRegex(r) => {
                        write!(f, " WITH KEY !~ {}", Literal::Regex(r.clone()))?
                    }
                    KeySelector::In(keys) => {
                        f.write_str(" WITH KEY IN (")?;
                        for (n, k) in keys.iter().enumerate() {
                            if n > 0 {
                                f.write_str(", ")?;
                            }
                            write!(f, "{k}")?;
                        }
                        f.write_str(")")?;
                    }
                }
                tail(f, condition, limit)
            }
            ShowStatement::FieldKeys { from } => with_from(f, "SHOW FIELD KEYS", from),
        }
    }
}

fn key_selector(i: &str) -> PResult<'_, KeySelector> {
    if let Ok((r, _)) = keyword("IN")(i) {
        let (r, _) = expect("'(' after IN", token("("))(r)?;
        let (mut r, first) = expect("a tag key", identifier)(r)?;
        let mut keys = vec![first];
        while let Ok((after, _)) = token(",")(r) {
            let (after, k) = expect("a tag key", identifier)(after)?;
            keys.push(k);
            r = after;
        }
        let (r, _) = expect("')' after the tag keys", token(")"))(r)?;
        return Ok((r, KeySelector::In(keys)));
    }
    for (op, regex_op) in [("=~", true), ("!~", false)] {
        if let Ok((r, _)) = token(op)(i) {
            let (r, re) = expect("a regular expression /…/", regex)(r)?;
            let k = if regex_op {
                KeySelector::Regex(re)
            } else {
                KeySelector::NotRegex(re)
            };
            return Ok((r, k));
        }
    }
    if let Ok((r, _)) = token("!=")(i) {
        let (r, k) = expect("a tag key", identifier)(r)?;
        return Ok((r, KeySelector::NotEqual(k)));
    }
    let (r, _) = expect("'=', '!=', '=~', '!~' or IN after WITH KEY", token("="))(i)?;
    let (r, k) = expect("a tag key", identifier)(r)?;
    Ok((r, KeySelector::Equal(k)))
}

/// `WITH MEASUREMENT =~ /re/` (or `= m`): (matches, regex or name).
fn with_measurement(i: &str) -> PResult<'_, Option<(bool, Literal)>> {
    let Ok((r, _)) = keyword("WITH")(i) else {
        return Ok((i, None));
    };
    let (r, _) = expect("MEASUREMENT after WITH", keyword("MEASUREMENT"))(r)?;
    for (op, equal) in [("=~", true), ("!~", false)] {
        if let Ok((r, _)) = token(op)(r) {
            let (r, re) = expect("a regular expression /…/", regex)(r)?;
            return Ok((r, Some((equal, Literal::Regex(re)))));
        }
    }
    for (op, equal) in [("!=", false), ("=", true)] {
        if let Ok((r, _)) = token(op)(r) {
            let (r, m) = expect("a measurement name", identifier)(r)?;
            return Ok((r, Some((equal, Literal::String(m.0)))));
        }
    }
    fail_at(r, "'=~', '!~', '=' or '!=' after WITH MEASUREMENT")
}

/// `SHOW …` up to the end of the statement.
pub fn show(i: &str) -> PResult<'_, ShowStatement> {
    let (i, _) = keyword("SHOW")(i)?;
    if let Ok((rest, _)) = keyword("DATABASES")(i) {
        return Ok((rest, ShowStatement::Databases));
    }
    if let Ok((rest, _)) = keyword("RETENTION")(i) {
        let (rest, _) = expect("POLICIES after SHOW RETENTION", keyword("POLICIES"))(rest)?;
        if let Ok((r, _)) = keyword("ON")(rest) {
            let (r, db) = expect("a database name after ON", identifier)(r)?;
            return Ok((r, ShowStatement::RetentionPolicies { on: Some(db) }));
        }
        return Ok((rest, ShowStatement::RetentionPolicies { on: None }));
    }
    if let Ok((rest, _)) = keyword("MEASUREMENTS")(i) {
        let (rest, with) = with_measurement(rest)?;
        let (rest, condition) = where_clause(rest)?;
        let (rest, limit) = limit_clause(rest)?;
        return Ok((
            rest,
            ShowStatement::Measurements {
                with,
                condition,
                limit,
            },
        ));
    }
    if let Ok((rest, _)) = keyword("SERIES")(i) {
        let (rest, from) = from_clause(rest)?;
        let (rest, condition) = where_clause(rest)?;
        let (rest, limit) = limit_clause(rest)?;
        return Ok((
            rest,
            ShowStatement::Series {
                from,
                condition,
                limit,
            },
        ));
    }
    if let Ok((rest, _)) = keyword("FIELD")(i) {
        let (rest, _) = expect("KEYS after SHOW FIELD", keyword("KEYS"))(rest)?;
        let (rest, from) = from_clause(rest)?;
        return Ok((rest, ShowStatement::FieldKeys { from }));
    }
    if let Ok((rest, _)) = keyword("TAG")(i) {
        if let Ok((rest, _)) = keyword("KEYS")(rest) {
            let (rest, from) = from_clause(rest)?;
            let (rest, condition) = where_clause(rest)?;
            return Ok((rest, ShowStatement::TagKeys { from, condition }));
        }
        let (rest, _) = expect("KEYS or VALUES after SHOW TAG", keyword("VALUES"))(rest)?;
        let (rest, from) = from_clause(rest)?;
        let (rest, _) = expect("WITH KEY …", keyword("WITH"))(rest)?;
        let (rest, _) = expect("KEY after WITH", keyword("KEY"))(rest)?;
        let (rest, key) = key_selector(rest)?;
        let (rest, condition) = where_clause(rest)?;
        let (rest, limit) = limit_clause(rest)?;
        return Ok((
            rest,
            ShowStatement::TagValues {
                from,
                key,
                condition,
                limit,
            },
        ));
    }
    fail_at(
        i,
        "DATABASES, RETENTION POLICIES, MEASUREMENTS, SERIES, TAG KEYS, TAG VALUES or FIELD KEYS after SHOW",
    )
}
