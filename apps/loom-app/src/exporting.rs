//! Continuous Parquet export (`--export-to`): opens the target at start
//! (a bad URL, missing credentials or a missing bucket stop the app with
//! the cause before it listens) and runs `export::continuous` on a thread
//! of its own, reading through a reader: ingest never waits for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use loom::Reader;

use crate::cli::Cli;

/// Stops the export thread when dropped (it finishes the file under way
/// only if the process lives on; the manifest makes either safe).
pub struct Exporting {
    stop: Arc<AtomicBool>,
}

impl Drop for Exporting {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Starts exporting when `--export-to` is given.
pub fn start(cli: &Cli, reader: Reader) -> anyhow::Result<Option<Exporting>> {
    let Some(url) = &cli.export_to else {
        return Ok(None);
    };
    let host = cli.host.clone().unwrap_or_else(export::hostname);
    let target = export::Target::open(url).context("--export-to")?;
    let exporter = export::Exporter::open(target, export::ExportConfig::new(host.clone()))
        .context("--export-to")?;
    let m = exporter.manifest();
    println!(
        "exporting to {url} as host {host} every {} s (resuming at log position {}, {} records exported before)",
        cli.export_interval_s, m.position, m.records_exported
    );
    let stop = Arc::new(AtomicBool::new(false));
    let status = Arc::new(export::continuous::ExportStatus::default());
    let interval = Duration::from_secs(cli.export_interval_s);
    let s = stop.clone();
    std::thread::Builder::new()
        .name("export".into())
        .spawn(move || export::continuous::run(reader, exporter, interval, s, status))
        .context("starting the export thread")?;
    Ok(Some(Exporting { stop }))
}
