//! Results → InfluxDB 1.x JSON (`{"results":[{"statement_id":0,"series":[…]}]}`).

use serde_json::{json, Map, Value as Json};

use crate::error::{Error, Result};
use crate::result::{Cell, StatementResult};

/// How times are written: RFC 3339 strings (the default) or integers in a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Epoch {
    /// `2023-11-14T22:13:20.5Z`.
    Rfc3339,
    /// Integers in ns, µs (`u`), ms, s, minutes (`m`) or hours (`h`).
    Unit(i128),
}

impl Epoch {
    /// Parses the `epoch` parameter: `ns`, `u`/`µ`, `ms`, `s`, `m`, `h`.
    pub fn parse(s: &str) -> Result<Epoch> {
        let per = match s {
            "ns" | "n" => 1,
            "u" | "µ" | "us" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => {
                return Err(Error::Plan(format!(
                    "invalid epoch {other:?}: use one of h, m, s, ms, u, ns"
                )))
            }
        };
        Ok(Epoch::Unit(per))
    }
}

/// RFC 3339 with nanoseconds, trailing zeros trimmed (Go's `RFC3339Nano`).
pub fn rfc3339(ns: i128) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000) as u32;
    let Some(dt) = i64::try_from(secs)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, frac))
    else {
        return ns.to_string();
    };
    let mut out = dt.format("%Y-%m-%dT%H:%M:%S").to_string();
    if frac > 0 {
        let f = format!("{frac:09}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

fn cell(c: &Cell, epoch: Epoch) -> Json {
    match c {
        Cell::Null => Json::Null,
        Cell::Time(ns) => match epoch {
            Epoch::Rfc3339 => Json::String(rfc3339(*ns)),
            Epoch::Unit(per) => {
                let v = ns.div_euclid(per);
                i64::try_from(v).map_or(Json::Null, |v| json!(v))
            }
        },
        Cell::UInt(u) => json!(u),
        Cell::Int(i) => json!(i),
        Cell::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Cell::Str(s) => Json::String(s.clone()),
        Cell::Bool(b) => Json::Bool(*b),
    }
}

/// One statement's result object.
pub fn statement(id: usize, r: &Result<StatementResult>, epoch: Epoch) -> Json {
    let mut o = Map::new();
    o.insert("statement_id".into(), json!(id));
    match r {
        Err(e) => {
            o.insert("error".into(), Json::String(e.to_string()));
        }
        Ok(res) if res.series.is_empty() => {}
        Ok(res) => {
            let series: Vec<Json> = res
                .series
                .iter()
                .map(|s| {
                    let mut so = Map::new();
                    // SHOW SERIES and SHOW RETENTION POLICIES have no name.
                    if !s.name.is_empty() {
                        so.insert("name".into(), Json::String(s.name.clone()));
                    }
                    if !s.tags.is_empty() {
                        let tags: Map<String, Json> = s
                            .tags
                            .iter()
                            .map(|(k, v)| (k.clone(), Json::String(v.clone())))
                            .collect();
                        so.insert("tags".into(), Json::Object(tags));
                    }
                    so.insert("columns".into(), json!(s.columns));
                    let values: Vec<Json> = s
                        .values
                        .iter()
                        .map(|row| Json::Array(row.iter().map(|c| cell(c, epoch)).collect()))
                        .collect();
                    so.insert("values".into(), Json::Array(values));
                    Json::Object(so)
                })
                .collect();
            o.insert("series".into(), Json::Array(series));
        }
    }
    Json::Object(o)
}

/// The whole response body: `{"results": [...]}`.
pub fn results(rs: &[Result<StatementResult>], epoch: Epoch) -> Json {
    json!({
        "results": rs.iter().enumerate().map(|(i, r)| statement(i, r, epoch)).collect::<Vec<_>>()
    })
}

/// A request-level error body: `{"error": "..."}`.
pub fn error(message: &str) -> Json {
    json!({ "error": message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_trims_like_go() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000_500_000_000), "2023-11-14T22:13:20.5Z");
        assert_eq!(
            rfc3339(1_700_000_000_000_001_000),
            "2023-11-14T22:13:20.000001Z"
        );
    }
}
