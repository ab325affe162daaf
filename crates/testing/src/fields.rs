//! The machine-readable output lines, parsed once: `ANSWER query=… k=v…`,
//! `STATS k=v…`, and the `Final:` line's `name value` counts.

use std::collections::HashMap;

/// `key=value` pairs of one line.
pub type Fields = HashMap<String, String>;

/// The `key=value` pairs of `line` (words without `=` are skipped).
pub fn fields(line: &str) -> Fields {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The fields of the first of `lines` that starts with `prefix`; panics
/// (showing every line) when there is none.
pub fn line_fields(lines: &[String], prefix: &str) -> Fields {
    let l = lines
        .iter()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{}", lines.join("\n")));
    fields(l)
}

/// `key` of `map` as a number; panics naming the key when missing.
pub fn num(map: &Fields, key: &str) -> u64 {
    map.get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric {key} in {map:?}"))
}

/// The number after `label ` in a human line such as `Final: …, late
/// refused 3, …` (up to the next `,` or space); `None` when absent.
pub fn after(line: &str, label: &str) -> Option<u64> {
    let rest = line.split(label).nth(1)?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_counts_parse() {
        let f = fields("ANSWER query=rocksdb-p1 t0=3 t1=15 count=7 max=none");
        assert_eq!(f["query"], "rocksdb-p1");
        assert_eq!(num(&f, "count"), 7);
        assert_eq!(f["max"], "none");
        let lines = vec!["x".to_string(), "STATS received=4 dropped=0".to_string()];
        assert_eq!(num(&line_fields(&lines, "STATS "), "received"), 4);
        let fin =
            "Final: records received 10, dropped 0 (0.000 %), late refused 3, persists failed 0";
        assert_eq!(after(fin, "late refused"), Some(3));
        assert_eq!(after(fin, "records received"), Some(10));
        assert_eq!(after(fin, "nothing"), None);
    }
}
