//! InfluxDB JSON → aligned table or CSV (times as RFC 3339 when they are ns).

use serde_json::Value;

fn text(v: &Value, column: &str) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) if column == "time" => n
            .as_i64()
            .map_or_else(|| n.to_string(), |ns| influxql::rfc3339(i128::from(ns))),
        other => other.to_string(),
    }
}

/// Whether the response holds a request or statement error.
pub fn has_error(json: &Value) -> bool {
    json.get("error").is_some()
        || json["results"]
            .as_array()
            .is_some_and(|r| r.iter().any(|s| s.get("error").is_some()))
}

fn tags(s: &Value) -> String {
    s.get("tags")
        .and_then(Value::as_object)
        .map(|t| {
            t.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// A series or an error message of a response, in order.
enum Item<'a> {
    Series(&'a Value),
    Error(&'a str),
}

fn items(json: &Value) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    if let Some(e) = json.get("error").and_then(Value::as_str) {
        out.push(Item::Error(e));
    }
    for r in json["results"].as_array().into_iter().flatten() {
        if let Some(e) = r.get("error").and_then(Value::as_str) {
            out.push(Item::Error(e));
        }
        for s in r["series"].as_array().into_iter().flatten() {
            out.push(Item::Series(s));
        }
    }
    out
}

/// Aligned columns under a `name: … tags: …` heading per series.
pub fn table(json: &Value) -> String {
    let mut out = String::new();
    for item in items(json) {
        let s = match item {
            Item::Error(e) => {
                out.push_str(&format!("ERR: {e}\n"));
                continue;
            }
            Item::Series(s) => s,
        };
        {
            let cols: Vec<String> = s["columns"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c.as_str().unwrap_or("").to_string())
                .collect();
            let rows: Vec<Vec<String>> = s["values"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    r.as_array()
                        .into_iter()
                        .flatten()
                        .zip(&cols)
                        .map(|(v, c)| text(v, c))
                        .collect()
                })
                .collect();
            let widths: Vec<usize> = (0..cols.len())
                .map(|i| {
                    rows.iter()
                        .filter_map(|r| r.get(i))
                        .map(|c| c.chars().count())
                        .chain([cols[i].chars().count()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            out.push_str(&format!("name: {}\n", s["name"].as_str().unwrap_or("")));
            let t = tags(s);
            if !t.is_empty() {
                out.push_str(&format!("tags: {t}\n"));
            }
            let line = |cells: &[String]| {
                cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, w)| format!("{c:<w$}"))
                    .collect::<Vec<_>>()
                    .join("  ")
                    .trim_end()
                    .to_string()
                    + "\n"
            };
            out.push_str(&line(&cols));
            out.push_str(&line(
                &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>(),
            ));
            for r in &rows {
                out.push_str(&line(r));
            }
            out.push('\n');
        }
    }
    out
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `name,tags,<columns>` header per series, then one line per row.
pub fn csv(json: &Value) -> String {
    let mut out = String::new();
    for item in items(json) {
        let s = match item {
            Item::Error(e) => {
                out.push_str(&format!("ERR: {e}\n"));
                continue;
            }
            Item::Series(s) => s,
        };
        {
            let cols: Vec<String> = s["columns"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c.as_str().unwrap_or("").to_string())
                .collect();
            out.push_str("name,tags,");
            out.push_str(
                &cols
                    .iter()
                    .map(|c| csv_cell(c))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
            let name = csv_cell(s["name"].as_str().unwrap_or(""));
            let t = csv_cell(&tags(s));
            for r in s["values"].as_array().into_iter().flatten() {
                let cells: Vec<String> = r
                    .as_array()
                    .into_iter()
                    .flatten()
                    .zip(&cols)
                    .map(|(v, c)| csv_cell(&text(v, c)))
                    .collect();
                out.push_str(&format!("{name},{t},{}\n", cells.join(",")));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn response() -> Value {
        json!({"results": [
            {"statement_id": 0, "series": [{"name": "kv", "tags": {"op": "read"},
              "columns": ["time", "max", "note"],
              "values": [[1_500_000_000i64, 1387, "a,b"], [2_000_000_000i64, null, "x"]]}]},
            {"statement_id": 1, "error": "unknown field nope"}
        ]})
    }

    #[test]
    fn table_aligns_columns_and_shows_errors() {
        let t = table(&response());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "name: kv");
        assert_eq!(lines[1], "tags: op=read");
        assert_eq!(lines[2], "time                    max   note");
        assert_eq!(lines[4], "1970-01-01T00:00:01.5Z  1387  a,b");
        assert_eq!(lines[5], "1970-01-01T00:00:02Z          x");
        assert!(t.contains("ERR: unknown field nope"));
        assert!(has_error(&response()));
    }

    #[test]
    fn csv_quotes_and_repeats_name_and_tags() {
        let c = csv(&response());
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines[0], "name,tags,time,max,note");
        assert_eq!(lines[1], "kv,op=read,1970-01-01T00:00:01.5Z,1387,\"a,b\"");
        assert_eq!(lines[2], "kv,op=read,1970-01-01T00:00:02Z,,x");
    }
}
