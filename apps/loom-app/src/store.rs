//! Opening the store: a given directory (reopened and appended to when it
//! holds a store) or a fresh temporary one, and the per-source account of
//! what was recovered.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Context;
use loom::{Reader, Writer};

use crate::cli::Cli;
use crate::sources::describe;

/// An open store and, for the default location, the directory to delete.
pub struct Store {
    pub writer: Writer,
    pub reader: Reader,
    pub dir: PathBuf,
    pub temp: Option<tempfile::TempDir>,
}

/// `µs since the epoch` as RFC 3339 (UTC, ms).
pub fn fmt_time(us: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_micros(us)).to_string()
}

/// Opens the store the flags name.
pub fn open(cli: &Cli) -> anyhow::Result<Store> {
    let (dir, temp) = match &cli.loom_path {
        Some(p) => (p.clone(), None),
        None => {
            let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tmp-data");
            std::fs::create_dir_all(&base)
                .with_context(|| format!("creating {}", base.display()))?;
            let t = tempfile::Builder::new()
                .prefix("loom-app-")
                .tempdir_in(&base)
                .with_context(|| format!("creating a store directory in {}", base.display()))?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let config = loom::Config {
        retention_bytes: cli.retention_bytes,
        retention_age_us: cli.retention_age_s.map(|s| s.saturating_mul(1_000_000)),
        compression_level: (cli.compression_level != 0).then_some(cli.compression_level),
        ..loom::Config::default()
    };
    let (writer, reader) = loom::open(&dir, config)
        .with_context(|| format!("opening the store in {}", dir.display()))?;
    print_recovery(&dir, &writer, &reader);
    Ok(Store {
        writer,
        reader,
        dir,
        temp,
    })
}

/// One line per recovered source (records, time span), then what was
/// skipped, missing or cut and why.
fn print_recovery(dir: &Path, w: &Writer, r: &Reader) {
    let rep = w.recovery();
    if rep.records == 0 && !rep.lost_anything() {
        return;
    }
    println!(
        "reopened {}: {} records in {} chunks, {:.0} ms ({} segments from their index, {} scanned)",
        dir.display(),
        rep.records,
        rep.chunks,
        rep.millis,
        rep.segments_from_index,
        rep.segments_scanned
    );
    let snap = r.snapshot();
    for id in snap.sources() {
        let name = snap
            .schema(id)
            .map(describe)
            .unwrap_or_else(|| format!("source {id}"));
        let n = snap.retained_count(id);
        match snap.time_span(id) {
            Some((t0, t1)) => println!(
                "  recovered {name}: {n} records, {} .. {} ({:.1} s)",
                fmt_time(t0),
                fmt_time(t1),
                (t1 - t0) as f64 / 1e6
            ),
            None => println!("  recovered {name}: no records"),
        }
    }
    for (seg, off, why) in &rep.skipped {
        println!("  dropped: corrupt chunk in segment {seg} at offset {off} skipped ({why})");
    }
    for h in &rep.holes {
        println!("  dropped: {h}");
    }
    if let Some((at, why)) = &rep.torn_tail {
        println!("  dropped: torn tail cut at log address {at} ({why})");
    }
    if !rep.lost_anything() {
        println!("  dropped: nothing");
    }
}
