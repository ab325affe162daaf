//! `loom info`: what a store holds, per measurement and tag set, and what
//! each measurement costs on disk.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Context;

/// Bytes the files under `p` take on disk as `du` counts them (allocated
/// 512-byte blocks, not apparent lengths): the store's, and apart from them
/// the intake log's reserve (blank and reused files loom-app keeps in
/// `otlp-intake/` so its syncs write over blocks a file already has; they
/// hold no records).
pub fn allocated_bytes(p: &Path) -> (u64, u64) {
    let Ok(rd) = std::fs::read_dir(p) else {
        return (0, 0);
    };
    let reserve_dir = p.file_name().is_some_and(|n| n == "otlp-intake");
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => allocated_bytes(&e.path()),
            Ok(m) => {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if reserve_dir && (name.starts_with("blank-") || name.starts_with("spare-")) {
                    (0, m.blocks() * 512)
                } else {
                    (m.blocks() * 512, 0)
                }
            }
            Err(_) => (0, 0),
        })
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// Storage of one measurement: its series' chunks together.
#[derive(Default)]
struct Cost {
    records: u64,
    chunk_bytes: u64,
    stored_bytes: u64,
}

/// One line per measurement: records, bytes on disk (every file of the
/// store at its allocated size, shared out by each measurement's part of
/// the segment bytes), bytes per record, compression ratio.
fn storage_lines(
    out: &mut String,
    costs: &BTreeMap<String, Cost>,
    allocated: u64,
) -> std::fmt::Result {
    let stored: u64 = costs.values().map(|c| c.stored_bytes).sum();
    for (m, c) in costs {
        let share = if stored == 0 {
            0.0
        } else {
            allocated as f64 * c.stored_bytes as f64 / stored as f64
        };
        let per = if c.records == 0 {
            0.0
        } else {
            share / c.records as f64
        };
        let ratio = if c.stored_bytes == 0 {
            0.0
        } else {
            c.chunk_bytes as f64 / c.stored_bytes as f64
        };
        writeln!(
            out,
            "storage measurement={m} records={} bytes_on_disk={:.0} bytes_per_record={per:.2} compression_ratio={ratio:.2} uncompressed_bytes={}",
            c.records, share, c.chunk_bytes
        )?;
    }
    Ok(())
}

/// One series' entry: its tags, fields, index, record counts and time span.
fn series_entry(
    out: &mut String,
    snap: &loom::Snapshot,
    id: loom::SourceId,
    s: &loom::SourceSchema,
) -> anyhow::Result<()> {
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
    let span = snap.time_span(id).map_or("empty".to_string(), |(a, b)| {
        format!(
            "{} .. {} ({:.3} s)",
            influxql::rfc3339(i128::from(a) * 1000),
            influxql::rfc3339(i128::from(b) * 1000),
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
        snap.retained_count(id),
        snap.record_count(id),
    )?;
    Ok(())
}

/// A text description of the store at `dir` (opened read-only).
pub fn describe(dir: &Path) -> anyhow::Result<String> {
    let reader = loom::open_read_only(dir)
        .with_context(|| format!("opening {} read-only", dir.display()))?;
    let snap = reader.snapshot();
    let mut out = String::new();
    let mut costs: BTreeMap<String, Cost> = BTreeMap::new();
    let mut schemas = snap.schemas();
    schemas.sort_by(|a, b| (&a.1.measurement, &a.1.tags).cmp(&(&b.1.measurement, &b.1.tags)));
    // A series' late siblings (records later than the reorder window,
    // stored at their own times) are listed under their series, not as
    // series of their own.
    let siblings = loom::late_siblings(schemas.iter().copied());
    let mut late_of: BTreeMap<loom::SourceId, Vec<loom::SourceId>> = BTreeMap::new();
    for (sib, (base, _)) in &siblings {
        late_of.entry(*base).or_default().push(*sib);
    }
    for (id, s) in &schemas {
        if let Some(u) = snap.storage_use(*id) {
            let c = costs.entry(s.measurement.clone()).or_default();
            c.records += u.records;
            c.chunk_bytes += u.chunk_bytes;
            c.stored_bytes += u.stored_bytes;
        }
        if siblings.contains_key(id) {
            continue;
        }
        series_entry(&mut out, &snap, *id, s)?;
        if let Some(sibs) = late_of.get(id) {
            let (kept, written) = sibs.iter().fold((0, 0), |(k, w), sib| {
                (k + snap.retained_count(*sib), w + snap.record_count(*sib))
            });
            writeln!(
                out,
                "  late records (older than the series' newest when they came, stored at their own times in {} late siblings): {kept} retained of {written} written",
                sibs.len()
            )?;
        }
    }
    for id in snap.sources() {
        if snap.schema(id).is_none() {
            if let Some(u) = snap.storage_use(id) {
                let c = costs.entry("(no schema)".into()).or_default();
                c.records += u.records;
                c.chunk_bytes += u.chunk_bytes;
                c.stored_bytes += u.stored_bytes;
            }
        }
    }
    let (allocated, reserve) = allocated_bytes(dir);
    let others = snap.sources().len() - schemas.len();
    if others > 0 {
        writeln!(
            out,
            "{others} source(s) without a schema (not visible to InfluxQL)"
        )?;
    }
    storage_lines(&mut out, &costs, allocated)?;
    let records: u64 = costs.values().map(|c| c.records).sum();
    writeln!(
        out,
        "store {}: {} series, {records} records, {:.1} MB on disk (allocated, every file), {:.2} bytes/record",
        dir.display(),
        schemas.len() - siblings.len(),
        allocated as f64 / 1e6,
        if records == 0 { 0.0 } else { allocated as f64 / records as f64 }
    )?;
    if reserve > 0 {
        writeln!(
            out,
            "intake-log reserve: {:.1} MB (blank and reused OTLP log files, no records; not counted above)",
            reserve as f64 / 1e6
        )?;
    }
    let m = snap.index_memory();
    writeln!(
        out,
        "index memory: {:.1} MB held (summaries of recent data {:.1} MB, time index {:.1} MB, paged back in {:.1} MB of summaries and {:.1} MB of time index of a {:.1} MB cache); summaries and time index of older segments stay in their index files",
        m.held_bytes() as f64 / 1e6,
        m.summaries_bytes as f64 / 1e6,
        m.directory_bytes as f64 / 1e6,
        m.cache_bytes as f64 / 1e6,
        m.directory_cache_bytes as f64 / 1e6,
        m.cache_budget as f64 / 1e6
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::{FieldDef, FieldType, SourceId, SourceSchema};

    /// A late sibling is listed under its series, with its records, and
    /// the store counts one series.
    #[test]
    fn late_siblings_are_listed_under_their_series() {
        let dir = tempfile::tempdir().unwrap();
        let schema = SourceSchema {
            measurement: "kv".into(),
            tags: vec![("op".into(), "read".into())],
            fields: vec![FieldDef::new("v", 0, FieldType::U64)],
            index: None,
        };
        let base = SourceId(7);
        let sib = loom::late_sibling_id(base, 1);
        let (mut w, _) = loom::open(dir.path(), loom::Config::default()).unwrap();
        let h = w.declare(base, schema.clone()).unwrap();
        let hs = w.declare(sib, schema).unwrap();
        for ts in [10u64, 20, 30] {
            w.push(h, ts, &ts.to_le_bytes()).unwrap();
        }
        for ts in [15u64, 25] {
            w.push(hs, ts, &ts.to_le_bytes()).unwrap();
        }
        w.close().unwrap();
        let text = describe(dir.path()).unwrap();
        assert_eq!(text.matches("kv,op=read [source").count(), 1, "{text}");
        assert!(
            text.contains("stored at their own times in 1 late siblings): 2 retained of 2 written"),
            "{text}"
        );
        assert!(text.contains(": 1 series, 5 records"), "{text}");
    }
}
