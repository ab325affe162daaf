//! The brute-force oracle of `brute_force.rs`: what a statement must
//! answer, computed by walking every record (no index, no engine).

use super::*;

fn value_of(schema: &SourceSchema, name: &str, bytes: &[u8]) -> u64 {
    match schema.field(name).and_then(|f| f.read(bytes)) {
        Some(loom::Value::Unsigned(v)) => v,
        other => panic!("field {name}: {other:?}"),
    }
}

fn holds(v: u64, op: &str, c: u64) -> bool {
    match op {
        "=" => v == c,
        "!=" => v != c,
        "<" => v < c,
        "<=" => v <= c,
        ">" => v > c,
        _ => v >= c,
    }
}

/// What the statement must return, from the records alone.
pub(crate) fn expected(st: &Stmt, recs: &[Rec], schemas: &[SourceSchema]) -> Vec<SeriesResult> {
    let m = measurement_name(st.measurement);
    let fields = fields_of(st.measurement);
    let (lo, hi) = st.bounds();
    // Series of the measurement in tag order, filtered by the op predicate.
    let mut series: Vec<usize> = (0..schemas.len())
        .filter(|&i| schemas[i].measurement == m)
        .filter(|&i| match (st.op_filter, st.has_op()) {
            (Some((eq, read)), true) => {
                (schemas[i].tag("op") == Some(if read { "read" } else { "write" })) == eq
            }
            _ => true,
        })
        .collect();
    series.sort_by(|a, b| schemas[*a].tags.cmp(&schemas[*b].tags));
    let grouped = st.group_op && st.has_op();
    let mut groups: BTreeMap<Vec<(String, String)>, Vec<usize>> = BTreeMap::new();
    for &i in &series {
        let key = if grouped {
            vec![(
                "op".to_string(),
                schemas[i].tag("op").unwrap_or("").to_string(),
            )]
        } else {
            vec![]
        };
        groups.entry(key).or_default().push(i);
    }
    let in_window = |ts: u64| {
        let ns = i128::from(ts) * 1000;
        lo.is_none_or(|l| ns >= l) && hi.is_none_or(|h| ns <= h)
    };
    let mut out = Vec::new();
    for (tags, members) in groups {
        // (ts, position of series in group, bytes, schema)
        let mut rows: Vec<(u64, usize, &[u8], &SourceSchema)> = Vec::new();
        for (pos, &i) in members.iter().enumerate() {
            for r in recs.iter().filter(|r| r.source == i && in_window(r.ts)) {
                if let Some((f, op, c)) = st.field_filter {
                    if !holds(
                        value_of(&schemas[i], fields[f % fields.len()], &r.bytes),
                        OPS[op],
                        c,
                    ) {
                        continue;
                    }
                }
                rows.push((r.ts, pos, &r.bytes, &schemas[i]));
            }
        }
        rows.sort_by_key(|r| (r.0, r.1));
        let mut values: Vec<Vec<Cell>> = Vec::new();
        let columns: Vec<String>;
        match &st.kind {
            Kind::Raw { fields: sel } => {
                let mut cols: Vec<(String, bool)> = match sel {
                    None => {
                        let mut c: Vec<(String, bool)> =
                            fields.iter().map(|f| (f.to_string(), true)).collect();
                        let mut keys: Vec<String> = schemas
                            .iter()
                            .filter(|s| s.measurement == m)
                            .flat_map(|s| s.tags.iter().map(|t| t.0.clone()))
                            .filter(|k| !(grouped && k == "op"))
                            .collect();
                        keys.sort();
                        keys.dedup();
                        c.extend(keys.into_iter().map(|k| (k, false)));
                        c.sort();
                        c
                    }
                    Some(fs) => fs
                        .iter()
                        .map(|&k| (fields[k % fields.len()].to_string(), true))
                        .collect(),
                };
                let mut seen: BTreeMap<String, u32> = BTreeMap::new();
                for c in cols.iter_mut() {
                    let n = seen.entry(c.0.clone()).or_insert(0);
                    if *n > 0 {
                        c.0 = format!("{}_{}", c.0, n);
                    }
                    *n += 1;
                }
                let srcs: Vec<String> = match sel {
                    None => cols.iter().map(|c| c.0.clone()).collect(),
                    Some(fs) => fs
                        .iter()
                        .map(|&k| fields[k % fields.len()].to_string())
                        .collect(),
                };
                columns = std::iter::once("time".to_string())
                    .chain(cols.iter().map(|c| c.0.clone()))
                    .collect();
                for (ts, _, bytes, schema) in &rows {
                    let mut row = vec![Cell::Time(i128::from(*ts) * 1000)];
                    for (c, src) in cols.iter().zip(&srcs) {
                        row.push(if c.1 {
                            Cell::UInt(value_of(schema, src, bytes))
                        } else {
                            Cell::Str(schema.tag(src).unwrap_or("").to_string())
                        });
                    }
                    values.push(row);
                }
            }
            Kind::Top { field, n } => {
                let fld = fields[field % fields.len()];
                columns = vec!["time".to_string(), "top".to_string()];
                let mut pts: Vec<(u64, u64, usize)> = rows
                    .iter()
                    .map(|r| (value_of(r.3, fld, r.2), r.0, r.1))
                    .collect();
                pts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
                pts.truncate(*n as usize);
                pts.sort_by_key(|p| (p.1, p.2));
                values = pts
                    .into_iter()
                    .map(|p| vec![Cell::Time(i128::from(p.1) * 1000), Cell::UInt(p.0)])
                    .collect();
            }
            Kind::Aggregate { calls, interval } => {
                let mut names: Vec<String> = Vec::new();
                let mut seen: BTreeMap<String, u32> = BTreeMap::new();
                for &(f, _) in calls {
                    let n = seen.entry(FUNCS[f].to_string()).or_insert(0);
                    names.push(if *n == 0 {
                        FUNCS[f].to_string()
                    } else {
                        format!("{}_{}", FUNCS[f], n)
                    });
                    *n += 1;
                }
                columns = std::iter::once("time".to_string()).chain(names).collect();
                let eval =
                    |pts: &[&(u64, usize, &[u8], &SourceSchema)]| -> Vec<(Cell, Option<u64>)> {
                        calls
                            .iter()
                            .map(|&(f, x)| {
                                let fld = fields[x % fields.len()];
                                let mut vs: Vec<(u64, u64)> =
                                    pts.iter().map(|p| (value_of(p.3, fld, p.2), p.0)).collect();
                                let n = vs.len() as u64;
                                let sum: u128 = vs.iter().map(|v| u128::from(v.0)).sum();
                                vs.sort();
                                match FUNCS[f] {
                                    "count" => (Cell::UInt(n), None),
                                    _ if n == 0 => (Cell::Null, None),
                                    "sum" => (Cell::UInt(sum as u64), None),
                                    "mean" => (Cell::Float(sum as f64 / n as f64), None),
                                    "min" => (Cell::UInt(vs[0].0), Some(vs[0].1)),
                                    "max" => {
                                        let mx = vs[vs.len() - 1].0;
                                        let t = vs.iter().find(|v| v.0 == mx).map(|v| v.1);
                                        (Cell::UInt(mx), t)
                                    }
                                    _ => {
                                        let p = PCTS[x % PCTS.len()];
                                        let k = ((n as f64) * p / 100.0 + 0.5).floor();
                                        if k < 1.0 || k > n as f64 {
                                            (Cell::Null, None)
                                        } else {
                                            let v = vs[k as usize - 1].0;
                                            let t = vs.iter().find(|e| e.0 == v).map(|e| e.1);
                                            (Cell::UInt(v), t)
                                        }
                                    }
                                }
                            })
                            .collect()
                    };
                match interval {
                    None => {
                        let pts: Vec<_> = rows.iter().collect();
                        if !pts.is_empty() {
                            let cells = eval(&pts);
                            let selector = calls.len() == 1
                                && matches!(FUNCS[calls[0].0], "min" | "max" | "percentile");
                            let time = if selector {
                                cells[0].1.map(|t| i128::from(t) * 1000)
                            } else {
                                Some(lo.unwrap_or(0))
                            };
                            if let Some(t) = time {
                                let mut row = vec![Cell::Time(t)];
                                row.extend(cells.into_iter().map(|c| c.0));
                                values.push(row);
                            }
                        }
                    }
                    Some((iv, fill_none)) => {
                        let (Some(lo), Some(hi)) = (lo, hi) else {
                            unreachable!()
                        };
                        let t0 = (lo + 999).div_euclid(1000).max(0) as u64;
                        let t1 = hi.div_euclid(1000);
                        if t1 >= 0 && t0 as i128 <= t1 {
                            let t1 = t1 as u64;
                            let mut b = t0 - t0 % iv;
                            let mut any = false;
                            while b <= t1 {
                                let pts: Vec<_> =
                                    rows.iter().filter(|r| r.0 >= b && r.0 < b + iv).collect();
                                let mut row = vec![Cell::Time(i128::from(b) * 1000)];
                                if !pts.is_empty() {
                                    any = true;
                                    row.extend(eval(&pts).into_iter().map(|c| c.0));
                                    values.push(row);
                                } else if !fill_none {
                                    row.extend(calls.iter().map(|&(f, _)| {
                                        if FUNCS[f] == "count" {
                                            Cell::UInt(0)
                                        } else {
                                            Cell::Null
                                        }
                                    }));
                                    values.push(row);
                                }
                                b += iv;
                            }
                            if !any {
                                values.clear();
                            }
                        }
                    }
                }
            }
        }
        if st.desc {
            values.reverse();
        }
        if let Some(n) = st.limit {
            values.truncate(n as usize);
        }
        if !values.is_empty() {
            out.push(SeriesResult {
                name: m.to_string(),
                tags,
                columns,
                values,
            });
        }
    }
    out
}
