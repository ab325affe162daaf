//! A small HTTP client of influxd's 1.x API: `/ping`, `/write` (line
//! protocol, precision ns) and `/query` (InfluxQL, JSON answers with ns times).

use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use crate::error::{Error, Result};

/// Longest part of an error body kept in an error message.
const MAX_ERROR_BODY: usize = 300;

/// One statement's answer: the first series' columns and rows (the
/// statements of this crate group by time at most, never by tag).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column names (`time` first).
    pub columns: Vec<String>,
    /// Rows of JSON values (`null` where a bucket is empty).
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// Value of `column` in row `row`, `None` if absent or null.
    pub fn get(&self, row: usize, column: &str) -> Option<&Value> {
        let i = self.columns.iter().position(|c| c == column)?;
        self.rows.get(row)?.get(i).filter(|v| !v.is_null())
    }

    /// Integer value of `column` in the first row (`count()` of nothing is
    /// absent: influxd returns no series).
    pub fn first_u64(&self, column: &str) -> Option<u64> {
        self.get(0, column).and_then(value_u64)
    }
}

/// A JSON number as u64 (influxd prints integer fields as integers, but
/// percentile of floats as floats).
pub fn value_u64(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_i64().map(|i| i.max(0) as u64))
        .or_else(|| v.as_f64().map(|f| f.max(0.0) as u64))
}

/// Client of one influxd and one database.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    query_timeout: Duration,
    base: String,
    db: String,
}

impl Client {
    /// A client of the influxd at `base_url` (`http://127.0.0.1:8086`) and
    /// database `db`. Requests time out after `timeout`, queries after
    /// [`Client::with_query_timeout`] (default: `timeout` too).
    pub fn new(base_url: &str, db: &str, timeout: Duration) -> Result<Client> {
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(Error::Config(format!(
                "--influx-url {base_url:?} must start with http://"
            )));
        }
        if db.is_empty() || db.contains('"') {
            return Err(Error::Config(format!("--db {db:?} is not a database name")));
        }
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| Error::Config(format!("building the HTTP client: {e}")))?;
        Ok(Client {
            http,
            query_timeout: timeout,
            base: base_url.trim_end_matches('/').to_string(),
            db: db.to_string(),
        })
    }

    /// The same client with queries timing out after `t`.
    pub fn with_query_timeout(mut self, t: Duration) -> Client {
        self.query_timeout = t;
        self
    }

    /// The base URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// The database.
    pub fn db(&self) -> &str {
        &self.db
    }

    /// `Ok` when influxd answers `/ping` with 204.
    pub async fn ping(&self) -> Result<()> {
        let url = format!("{}/ping", self.base);
        let r = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|source| Error::Http {
                what: "ping".into(),
                url: url.clone(),
                source,
            })?;
        check("ping", r).await
    }

    /// Creates the database (a no-op when it exists).
    pub async fn create_database(&self) -> Result<()> {
        let q = format!("CREATE DATABASE \"{}\"", self.db);
        let url = format!("{}/query", self.base);
        let r = self
            .http
            .post(&url)
            .query(&[("q", q.as_str())])
            .send()
            .await
            .map_err(|source| Error::Http {
                what: "create database".into(),
                url: url.clone(),
                source,
            })?;
        check("create database", r).await
    }

    /// Writes a line-protocol body of `points` points (precision ns). A
    /// database that vanished (influxd restarted on fresh directories) is
    /// created again and the body written once more.
    pub async fn write(&self, body: Bytes, points: u64) -> Result<()> {
        let what = format!("write {points} points");
        match self.write_once(&what, body.clone()).await {
            Err(Error::Status { status: 404, .. }) => {
                self.create_database().await?;
                self.write_once(&what, body).await
            }
            other => other,
        }
    }

    async fn write_once(&self, what: &str, body: Bytes) -> Result<()> {
        let url = format!("{}/write", self.base);
        let r = self
            .http
            .post(&url)
            .query(&[("db", self.db.as_str()), ("precision", "ns")])
            .body(body)
            .send()
            .await
            .map_err(|source| Error::Http {
                what: what.to_string(),
                url: url.clone(),
                source,
            })?;
        check(what, r).await
    }

    /// Runs InfluxQL `statements` (separated by `;`), times as ns since the
    /// epoch; one [`Table`] per statement (empty when no series matched).
    pub async fn query(&self, statements: &str) -> Result<Vec<Table>> {
        let url = format!("{}/query", self.base);
        let r = self
            .http
            .get(&url)
            .query(&[("db", self.db.as_str()), ("epoch", "ns"), ("q", statements)])
            .timeout(self.query_timeout)
            .send()
            .await
            .map_err(|source| Error::Http {
                what: statements.to_string(),
                url: url.clone(),
                source,
            })?;
        let status = r.status().as_u16();
        let text = r.text().await.map_err(|source| Error::Http {
            what: statements.to_string(),
            url: url.clone(),
            source,
        })?;
        if status != 200 {
            return Err(Error::Status {
                what: statements.to_string(),
                status,
                body: shorten(&text),
            });
        }
        parse_answer(statements, &text)
    }
}

async fn check(what: &str, r: reqwest::Response) -> Result<()> {
    let status = r.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(());
    }
    let body = r.text().await.unwrap_or_default();
    Err(Error::Status {
        what: what.to_string(),
        status,
        body: shorten(&body),
    })
}

fn shorten(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(MAX_ERROR_BODY) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Parses influxd's `/query` JSON: `{"results":[{"statement_id":0,
/// "series":[{"name":..,"columns":[..],"values":[[..]]}]}|{"error":..}]}`.
pub fn parse_answer(what: &str, text: &str) -> Result<Vec<Table>> {
    let bad = |message: String| Error::Answer {
        what: what.to_string(),
        message,
    };
    let v: Value = serde_json::from_str(text)
        .map_err(|e| bad(format!("answer is not JSON ({e}): {}", shorten(text))))?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(bad(format!("influxd: {e}")));
    }
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("no results in {}", shorten(text))))?;
    results
        .iter()
        .map(|r| {
            if let Some(e) = r.get("error").and_then(Value::as_str) {
                return Err(bad(format!("influxd: {e}")));
            }
            let Some(series) = r
                .get("series")
                .and_then(Value::as_array)
                .and_then(|s| s.first())
            else {
                return Ok(Table::default());
            };
            let columns = series
                .get("columns")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .map(|x| x.as_str().unwrap_or_default().to_string())
                        .collect()
                })
                .unwrap_or_default();
            let rows = series
                .get("values")
                .and_then(Value::as_array)
                .map(|rows| {
                    rows.iter()
                        .map(|row| row.as_array().cloned().unwrap_or_default())
                        .collect()
                })
                .unwrap_or_default();
            Ok(Table { columns, rows })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        let t = parse_answer(
            "q",
            r#"{"results":[{"statement_id":0,"series":[{"name":"kv","columns":["time","count","max","percentile"],"values":[[0,3,9,9]]}]},{"statement_id":1}]}"#,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].first_u64("count"), Some(3));
        assert_eq!(t[0].first_u64("percentile"), Some(9));
        assert_eq!(t[1].first_u64("count"), None);
        let e = parse_answer("q", r#"{"results":[{"statement_id":0,"error":"boom"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("boom"), "{e}");
        assert!(parse_answer("q", "<html>").is_err());
    }

    #[test]
    fn bad_settings_are_named() {
        let e = Client::new("127.0.0.1:8086", "loom", Duration::from_secs(1))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--influx-url"), "{e}");
    }
}
