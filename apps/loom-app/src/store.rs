//! Opening the store: `--loom-path`, else the standard data directory of
//! the user running loom-app (reopened and appended to when it holds a
//! store, never deleted), or with `--temp-store` a fresh directory deleted
//! at exit; then the per-source account of what was recovered.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Context;
use loom::{Reader, Writer};

use crate::cli::Cli;
use crate::sources::describe;

/// An open store and, for `--temp-store`, the directory to delete.
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
    let (dir, temp) = match (&cli.loom_path, &cli.temp_store) {
        (Some(p), _) => (p.clone(), None),
        (None, Some(base)) => {
            create_dir(base, "--temp-store")?;
            let t = tempfile::Builder::new()
                .prefix("loom-app-")
                .tempdir_in(base)
                .with_context(|| {
                    format!(
                        "--temp-store: creating a store directory in {}",
                        base.display()
                    )
                })?;
            (t.path().to_path_buf(), Some(t))
        }
        (None, None) => (default_dir()?, None),
    };
    if temp.is_none() {
        create_dir(&dir, "--loom-path")?;
    }
    let config = loom::Config {
        retention_bytes: cli.retention_bytes,
        index_cache_bytes: cli.index_cache_bytes,
        retention_age_us: cli.retention_age_s.map(|s| s.saturating_mul(1_000_000)),
        compression_level: (cli.compression_level != 0).then_some(cli.compression_level),
        flusher_nice: cli.flusher_nice,
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

/// The store directory when no flag names one: `/var/lib/loom` for root
/// (as a system service keeps its state), otherwise `$XDG_DATA_HOME/loom`
/// (an absolute path) or `$HOME/.local/share/loom`, per the XDG base
/// directory convention.
pub fn default_dir() -> anyhow::Result<PathBuf> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    data_dir_for(root, env("XDG_DATA_HOME"), env("HOME")).ok_or_else(|| {
        anyhow::anyhow!(
            "no default store directory: HOME is not set (and XDG_DATA_HOME is not an absolute path); name one with --loom-path DIR"
        )
    })
}

fn data_dir_for(
    root: bool,
    xdg_data_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    if root {
        return Some(PathBuf::from("/var/lib/loom"));
    }
    match xdg_data_home.filter(|p| p.is_absolute()) {
        Some(x) => Some(x.join("loom")),
        None => home.map(|h| h.join(".local/share/loom")),
    }
}

/// Creates `dir` (and its parents); the error names the path and the flag
/// that chooses another.
fn create_dir(dir: &Path, flag: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the store directory {}: {e}; choose a writable directory with {flag} DIR",
            dir.display()
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_directory_follows_the_user() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            data_dir_for(true, None, home.clone()),
            Some("/var/lib/loom".into())
        );
        assert_eq!(
            data_dir_for(false, None, home.clone()),
            Some("/home/u/.local/share/loom".into())
        );
        assert_eq!(
            data_dir_for(false, Some("/data".into()), home.clone()),
            Some("/data/loom".into())
        );
        // A relative XDG_DATA_HOME is invalid and ignored, as the spec says.
        assert_eq!(
            data_dir_for(false, Some("rel".into()), home),
            Some("/home/u/.local/share/loom".into())
        );
        assert_eq!(data_dir_for(false, None, None), None);
    }

    #[test]
    fn an_uncreatable_directory_names_the_path_and_the_flag() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let err = create_dir(&file.join("store"), "--loom-path")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&file.join("store").display().to_string()),
            "{err}"
        );
        assert!(err.contains("--loom-path"), "{err}");
    }
}
