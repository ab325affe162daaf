//! `loom info`: what a store holds, per measurement and tag set.

use std::fmt::Write;
use std::path::Path;

use anyhow::Context;

fn dir_bytes(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// A text description of the store at `dir` (opened read-only).
pub fn describe(dir: &Path) -> anyhow::Result<String> {
    let reader = loom::open_read_only(dir)
        .with_context(|| format!("opening {} read-only", dir.display()))?;
    let snap = reader.snapshot();
    let mut out = String::new();
    let mut schemas = snap.schemas();
    schemas.sort_by(|a, b| (&a.1.measurement, &a.1.tags).cmp(&(&b.1.measurement, &b.1.tags)));
    for (id, s) in &schemas {
        let tags: Vec<String> = s.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let fields: Vec<String> = s
            .fields
            .iter()
            .map(|f| format!("{}:{:?}", f.name, f.ty).to_lowercase())
            .collect();
        let index = s.index.as_ref().map_or("none".to_string(), |ix| {
            format!(
                "{} (bins from {} every {}, {} bins)",
                ix.field, ix.min, ix.interval, ix.n_bins
            )
        });
        let span = snap.time_span(*id).map_or("empty".to_string(), |(a, b)| {
            format!(
                "{} .. {} ({:.3} s)",
                influxql::encode::rfc3339(i128::from(a) * 1000),
                influxql::encode::rfc3339(i128::from(b) * 1000),
                b.saturating_sub(a) as f64 / 1e6
            )
        });
        writeln!(
            out,
            "{}{}{} [source {}]\n  fields: {}\n  index: {index}\n  records: {} retained of {} written\n  time: {span}",
            s.measurement,
            if tags.is_empty() { "" } else { "," },
            tags.join(","),
            id.0,
            fields.join(", "),
            snap.retained_count(*id),
            snap.record_count(*id),
        )?;
    }
    let others = snap.sources().len() - schemas.len();
    if others > 0 {
        writeln!(
            out,
            "{others} source(s) without a schema (not visible to InfluxQL)"
        )?;
    }
    writeln!(
        out,
        "store {}: {} series, {:.1} MB on disk (all series together; segments hold every source)",
        dir.display(),
        schemas.len(),
        dir_bytes(dir) as f64 / 1e6
    )?;
    Ok(out)
}
