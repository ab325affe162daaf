//! `SHOW DATABASES`, `SHOW MEASUREMENTS`, `SHOW TAG KEYS`, `SHOW TAG VALUES`
//! and `SHOW FIELD KEYS`.

use std::fmt;

use super::common::{expect, fail_at, keyword, token, PResult};
use super::identifier::{identifier, Ident};
use super::literal::unsigned;

/// A `SHOW …` statement of the subset.
#[derive(Debug, Clone, PartialEq)]
pub enum ShowStatement {
    /// `SHOW DATABASES`: Loom serves one database.
    Databases,
    /// `SHOW MEASUREMENTS [LIMIT n]` (Grafana tests a data source with `LIMIT 1`).
    Measurements {
        /// Most names listed.
        limit: Option<u64>,
    },
    /// `SHOW TAG KEYS [FROM m]`.
    TagKeys {
        /// Restrict to one measurement.
        from: Option<Ident>,
    },
    /// `SHOW TAG VALUES [FROM m] WITH KEY = k`.
    TagValues {
        /// Restrict to one measurement.
        from: Option<Ident>,
        /// The tag key.
        key: Ident,
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

fn with_from(f: &mut fmt::Formatter<'_>, head: &str, from: &Option<Ident>) -> fmt::Result {
    f.write_str(head)?;
    if let Some(m) = from {
        write!(f, " FROM {m}")?;
    }
    Ok(())
}

impl fmt::Display for ShowStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShowStatement::Databases => f.write_str("SHOW DATABASES"),
            ShowStatement::Measurements { limit: None } => f.write_str("SHOW MEASUREMENTS"),
            ShowStatement::Measurements { limit: Some(n) } => {
                write!(f, "SHOW MEASUREMENTS LIMIT {n}")
            }
            ShowStatement::TagKeys { from } => with_from(f, "SHOW TAG KEYS", from),
            ShowStatement::TagValues { from, key } => {
                with_from(f, "SHOW TAG VALUES", from)?;
                write!(f, " WITH KEY = {key}")
            }
            ShowStatement::FieldKeys { from } => with_from(f, "SHOW FIELD KEYS", from),
        }
    }
}

/// `SHOW …` up to the end of the statement.
pub fn show(i: &str) -> PResult<'_, ShowStatement> {
    let (i, _) = keyword("SHOW")(i)?;
    if let Ok((rest, _)) = keyword("DATABASES")(i) {
        return Ok((rest, ShowStatement::Databases));
    }
    if let Ok((rest, _)) = keyword("MEASUREMENTS")(i) {
        if let Ok((r, _)) = keyword("LIMIT")(rest) {
            let (r, n) = expect("a count after LIMIT", unsigned)(r)?;
            return Ok((r, ShowStatement::Measurements { limit: Some(n) }));
        }
        return Ok((rest, ShowStatement::Measurements { limit: None }));
    }
    if let Ok((rest, _)) = keyword("FIELD")(i) {
        let (rest, _) = expect("KEYS after SHOW FIELD", keyword("KEYS"))(rest)?;
        let (rest, from) = from_clause(rest)?;
        return Ok((rest, ShowStatement::FieldKeys { from }));
    }
    if let Ok((rest, _)) = keyword("TAG")(i) {
        if let Ok((rest, _)) = keyword("KEYS")(rest) {
            let (rest, from) = from_clause(rest)?;
            return Ok((rest, ShowStatement::TagKeys { from }));
        }
        let (rest, _) = expect("KEYS or VALUES after SHOW TAG", keyword("VALUES"))(rest)?;
        let (rest, from) = from_clause(rest)?;
        let (rest, _) = expect("WITH KEY = <tag key>", keyword("WITH"))(rest)?;
        let (rest, _) = expect("KEY after WITH", keyword("KEY"))(rest)?;
        if keyword("IN")(rest).is_ok() || token("=~")(rest).is_ok() {
            return fail_at(rest, "'=' (WITH KEY IN and =~ are not supported)");
        }
        let (rest, _) = expect("'=' after WITH KEY", token("="))(rest)?;
        let (rest, key) = expect("a tag key", identifier)(rest)?;
        return Ok((rest, ShowStatement::TagValues { from, key }));
    }
    fail_at(
        i,
        "DATABASES, MEASUREMENTS, TAG KEYS, TAG VALUES or FIELD KEYS after SHOW",
    )
}
