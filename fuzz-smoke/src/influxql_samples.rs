//! InfluxQL inputs generated from the grammar: statements of the subset
//! (and a few constructs outside it) over the fixture store's names, with
//! nesting up to past the depth bound and long chains, for
//! `influxql_statement`; the same as whole `/query` requests (query string
//! or form body, other parameters, credentials) for `influxql_query`.
//! Mutations after this are the driver's byte-level ones plus
//! [`mutate_text`], which splices grammar tokens in.

use influxql::fuzz::{encode_request, TOKEN};
use influxql::parse::MAX_DEPTH;

use replay::SplitMix64;

/// Names of the fixture store, a few unknown ones and quoted oddities.
const IDENTS: [&str; 14] = [
    "duration_us",
    "op",
    "ret",
    "load",
    "nr",
    "comm_name",
    "host",
    "comm",
    "time",
    "nope",
    "\"limit\"",
    "\"a b\"",
    "\"q\\\"uote\"",
    "\"b\u{e9}\"",
];

const MEASUREMENTS: [&str; 5] = ["kv", "sys", "missing", "loom..kv", "\"sys\""];

/// Tokens [`mutate_text`] splices in: the grammar's punctuation and
/// keywords, boundary numbers, and bytes a parser must survive.
const TOKENS: [&str; 30] = [
    "(",
    ")",
    "((",
    "))",
    ",",
    ";",
    "'",
    "\"",
    "\\",
    " AND ",
    " OR ",
    "=",
    "!=",
    "<>",
    "=~",
    "<=",
    " - ",
    " + ",
    "now()",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808ns",
    "1.5e",
    "0.0",
    "\0",
    "\u{e9}",
    "\u{fffd}",
    " SELECT ",
    " WHERE ",
    " GROUP BY time(1s) ",
];

fn pick<'a>(rng: &mut SplitMix64, from: &[&'a str]) -> &'a str {
    from[rng.index(from.len())]
}

fn number(rng: &mut SplitMix64) -> String {
    match rng.index(7) {
        0 => (rng.next_u64() % 1000).to_string(),
        1 => rng.next_u64().to_string(),
        2 => format!("{}.{}", rng.index(1000), rng.index(1000)),
        3 => format!("-{}", rng.index(1000)),
        4 => format!(
            "{}{}",
            1 + rng.index(5000),
            pick(rng, &["ns", "u", "ms", "s", "m", "h", "d", "w"])
        ),
        5 => {
            let most = if rng.one_in(4) { 24 } else { 19 };
            "9".repeat(1 + rng.index(most))
        }
        _ => format!("{}000000000", rng.index(400)),
    }
}

fn operand(rng: &mut SplitMix64) -> String {
    match rng.index(5) {
        0 | 1 => pick(rng, &IDENTS).to_string(),
        2 => number(rng),
        3 => format!(
            "'{}'",
            pick(
                rng,
                &[
                    "read",
                    "write",
                    "db",
                    "web\\'\"\\\\",
                    "",
                    "a\\'b",
                    "2023-11-14T22:13:20Z"
                ]
            )
        ),
        4 => {
            let mut s = String::from("now()");
            for _ in 0..1 + rng.index(3) {
                s += &format!(" {} {}", pick(rng, &["-", "+"]), number(rng));
            }
            s
        }
        _ => pick(rng, &IDENTS).to_string(),
    }
}

fn comparison(rng: &mut SplitMix64) -> String {
    if rng.one_in(3) {
        let op = pick(rng, &[">", "<", ">=", "<="]);
        return format!("time {op} now() - {}s", rng.index(500));
    }
    if rng.one_in(4) {
        let op = pick(rng, &["=~", "!~"]);
        let re = pick(
            rng,
            &[
                "/^(db-1|db-3)$/",
                "/read/",
                "/^$/",
                "/a\\/b/",
                "/(a+)+$/",
                "/[/",
                "/x{1000}{1000}/",
                "/unterminated",
            ],
        );
        return format!("{} {op} {re}", pick(rng, &IDENTS));
    }
    let op = pick(rng, &["=", "!=", "<>", "<", "<=", ">", ">="]);
    format!("{} {op} {}", operand(rng), operand(rng))
}

/// A condition at most `depth` levels of parentheses deep.
fn condition(rng: &mut SplitMix64, depth: usize) -> String {
    let terms = 1 + rng.index(4);
    let mut parts = Vec::new();
    for _ in 0..terms {
        if depth > 0 && rng.one_in(3) {
            parts.push(format!("({})", condition(rng, depth - 1)));
        } else {
            parts.push(comparison(rng));
        }
    }
    let mut s = parts.remove(0);
    for p in parts {
        s += if rng.one_in(3) { " OR " } else { " AND " };
        s += &p;
    }
    s
}

/// A condition nested around `levels` parentheses, near and past the bound.
fn deep_condition(rng: &mut SplitMix64) -> String {
    let levels = [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 2 * MAX_DEPTH][rng.index(4)];
    let mut s = String::new();
    for _ in 0..levels {
        s += "(";
        if rng.one_in(2) {
            s += &comparison(rng);
            s += if rng.one_in(2) { " AND " } else { " OR " };
        }
    }
    s += &comparison(rng);
    // An innermost chain sits at the deepest level the printer handles.
    if rng.one_in(2) {
        s += if rng.one_in(2) { " AND " } else { " OR " };
        s += &comparison(rng);
    }
    s += &")".repeat(levels);
    s
}

fn projection(rng: &mut SplitMix64) -> String {
    let field = pick(rng, &IDENTS);
    let p = match rng.index(12) {
        0 => "*".to_string(),
        1 | 2 => field.to_string(),
        3 => format!(
            "{}({field})",
            pick(
                rng,
                &["count", "SUM", "min", "max", "mean", "median", "foo"]
            )
        ),
        4 => format!("percentile({field}, {})", number(rng)),
        5 => format!("top({field}, {})", rng.index(12)),
        6 => {
            let k = rng.index(4);
            format!("max({}{field}{})", "max(".repeat(k), ")".repeat(k))
        }
        7 => "count(*)".to_string(),
        8 => format!(
            "{}({field}) {} {}",
            pick(rng, &["max", "mean", "first", "last", "spread"]),
            pick(rng, &["/", "*", "-", "+"]),
            if rng.one_in(2) {
                number(rng)
            } else {
                format!("(mean({field}) - {})", number(rng))
            }
        ),
        9 => format!(
            "{}({}({field}){})",
            pick(
                rng,
                &[
                    "derivative",
                    "non_negative_derivative",
                    "difference",
                    "cumulative_sum",
                    "moving_average",
                    "elapsed",
                    "count"
                ]
            ),
            pick(rng, &["mean", "max", "last", "distinct", "count"]),
            pick(rng, &["", ", 1s", ", 3", ", 10ms"])
        ),
        10 => {
            let k = 1 + rng.index(MAX_DEPTH + 2);
            format!("{}max({field}){}", "(".repeat(k), ")".repeat(k))
        }
        _ => format!(
            "{}({field})",
            pick(
                rng,
                &["count", "max", "mean", "median", "mode", "stddev", "bottom"]
            )
        ),
    };
    if rng.one_in(5) {
        format!("{p} AS {}", pick(rng, &IDENTS))
    } else {
        p
    }
}

/// One statement of the grammar.
pub fn statement(rng: &mut SplitMix64) -> String {
    if rng.one_in(6) {
        return pick(
            rng,
            &[
                "SHOW DATABASES",
                "SHOW MEASUREMENTS",
                "SHOW MEASUREMENTS LIMIT 1",
                "SHOW TAG KEYS FROM kv",
                "SHOW TAG VALUES FROM sys WITH KEY = host",
                "SHOW TAG VALUES WITH KEY = op",
                "SHOW FIELD KEYS",
                "SHOW FIELD KEYS FROM sys",
                "SHOW SERIES",
                "SHOW SERIES FROM kv WHERE op =~ /re/ LIMIT 3",
                "SHOW RETENTION POLICIES ON \"loom\"",
                "SHOW MEASUREMENTS WITH MEASUREMENT =~ /k/ LIMIT 10",
                "SHOW TAG VALUES FROM kv WITH KEY =~ /o/ WHERE op != 'x' OR op =~ /r/",
                "SHOW TAG VALUES WITH KEY IN (op, host) LIMIT 2",
                "SHOW TAG KEYS WHERE host = 'a'",
            ],
        )
        .to_string();
    }
    let n = 1 + rng.index(3);
    let fields: Vec<String> = (0..n).map(|_| projection(rng)).collect();
    let from = if rng.one_in(10) {
        format!(
            "(SELECT {} AS m FROM {} GROUP BY time(1s), op)",
            projection(rng),
            pick(rng, &MEASUREMENTS)
        )
    } else {
        pick(rng, &MEASUREMENTS).to_string()
    };
    let mut s = format!("SELECT {} FROM {from}", fields.join(", "));
    match rng.index(8) {
        0 => {}
        1 => s += &format!(" WHERE {}", deep_condition(rng)),
        2 => {
            let terms: Vec<String> = (0..50 + rng.index(500)).map(|_| comparison(rng)).collect();
            s += &format!(" WHERE {}", terms.join(pick(rng, &[" AND ", " OR "])));
        }
        _ => s += &format!(" WHERE {}", condition(rng, 3)),
    }
    if rng.one_in(3) {
        s += &format!(
            " GROUP BY time({}{}{})",
            1 + rng.index(100),
            pick(rng, &["s", "ms", "u", "m"]),
            pick(rng, &["", "", ", 3s", ", -1ms", ", 5ns"])
        );
        if rng.one_in(2) {
            s += &format!(
                ", {}",
                pick(rng, &["op", "host", "comm", "*", "nope", "/o/"])
            );
        }
        if rng.one_in(2) {
            s += pick(
                rng,
                &[
                    " fill(null)",
                    " fill(none)",
                    " fill(previous)",
                    " fill(0)",
                    " fill(linear)",
                    " fill(-1.5)",
                ],
            );
        }
    } else if rng.one_in(4) {
        s += &format!(" GROUP BY {}", pick(rng, &["op", "host", "*"]));
    }
    if rng.one_in(4) {
        s += pick(
            rng,
            &[
                " ORDER BY time DESC",
                " ORDER BY time ASC",
                " order by time",
            ],
        );
    }
    if rng.one_in(3) {
        s += &format!(" LIMIT {}", rng.index(20));
    }
    if rng.one_in(5) {
        s += &format!(" OFFSET {}", rng.index(20));
    }
    s
}

/// Query text: one to a few statements, now and then many.
pub fn query(rng: &mut SplitMix64) -> String {
    let n = if rng.one_in(20) {
        10 + rng.index(30)
    } else {
        1 + usize::from(rng.one_in(4))
    };
    let parts: Vec<String> = (0..n).map(|_| statement(rng)).collect();
    let mut q = parts.join(pick(rng, &[";", "; ", " ;\n"]));
    if rng.one_in(4) {
        q.push(';');
    }
    q
}

/// `influxql_statement` inputs.
pub fn statements(rng: &mut SplitMix64, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|_| query(rng).into_bytes()).collect()
}

fn form(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b' ' => "+".to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// `influxql_query` inputs: requests as `influxql::fuzz::request` reads them.
pub fn requests(rng: &mut SplitMix64, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let q = format!("q={}", form(&query(rng)));
            let mut others = vec![q];
            for p in [
                "db=loom",
                "epoch=ms",
                "epoch=ns",
                "epoch=x",
                "pretty=true",
                "chunked=true",
                "rp=autogen",
            ] {
                if rng.one_in(4) {
                    others.push(p.to_string());
                }
            }
            let auth = rng.one_in(4);
            if auth && rng.one_in(2) {
                others.push(format!(
                    "u=me&p={}",
                    if rng.one_in(4) { "wrong" } else { TOKEN }
                ));
            }
            let path = [0u8, 0, 2, 3][rng.index(4)] * 8 * u8::from(rng.one_in(8));
            let (flags, query, body) = if rng.one_in(2) {
                (path | u8::from(auth) << 2, others.join("&"), String::new())
            } else {
                (
                    1 | 2 | path | u8::from(auth) << 2,
                    String::new(),
                    others.join("&"),
                )
            };
            encode_request(flags, &query, body.as_bytes())
        })
        .collect()
}

/// Splices grammar tokens into `data` or repeats a range of it: the
/// mutations that grow nesting and chains past what bytes flips reach.
pub fn mutate_text(rng: &mut SplitMix64, data: &mut Vec<u8>) {
    let at = rng.index(data.len() + 1);
    match rng.index(3) {
        0 => {
            let t = pick(rng, &TOKENS).as_bytes().to_vec();
            data.splice(at..at, t);
        }
        1 if at < data.len() => {
            let end = (at + 1 + rng.index(16)).min(data.len());
            let piece = data[at..end].to_vec();
            for _ in 0..1 + rng.index(200) {
                data.splice(at..at, piece.iter().copied());
            }
        }
        _ => {
            let n = 1 + rng.index(2 * MAX_DEPTH);
            data.splice(at..at, std::iter::repeat_n(b'(', n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The samples reach every outcome: statements that parse (and most
    /// of those plan), refusals at the depth bound, and other parse errors.
    #[test]
    fn samples_parse_fail_and_reach_the_depth_bound() {
        let mut rng = SplitMix64::new(7);
        let (mut ok, mut deep, mut other) = (0, 0, 0);
        for q in statements(&mut rng, 2000) {
            let q = String::from_utf8(q).expect("UTF-8");
            match influxql::parse::parse_statements(&q) {
                Ok(_) => ok += 1,
                Err(e) if e.to_string().contains("nested deeper") => deep += 1,
                Err(_) => other += 1,
            }
        }
        assert!(ok > 600, "{ok} of 2000 parse");
        assert!(deep > 40, "{deep} of 2000 reach the depth bound");
        assert!(other > 40, "{other} of 2000 are other parse errors");
    }
}
