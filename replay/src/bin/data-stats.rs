//! `data-stats FILE`: per-source record counts, rates and value percentiles.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(name = "data-stats", about = "Describe a telemetry recording")]
struct Cli {
    /// Recording file.
    file: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let s = replay::stats::stats_of_file(&cli.file)
        .with_context(|| format!("reading {}", cli.file.display()))?;
    let h = &s.header;
    println!("recording {}: {h}", cli.file.display());
    if !h.description.is_empty() {
        println!("description: {}", h.description);
    }
    let span_s = (s.last_arrival_us - s.first_arrival_us) as f64 / 1e6;
    println!(
        "batches: {}, records: {}, span: {:.3} s, {:.0} records/s, {:.1} records/batch",
        s.batches,
        s.records,
        span_s,
        s.records as f64 / span_s.max(1e-6),
        s.records as f64 / (s.batches.max(1) as f64)
    );
    println!(
        "{:<14} {:>18} {:>12} {:>14} {:>8} {:>8} {:>10} {:>10}",
        "source", "id", "records", "records/s", "p50", "p99", "p99.99", "max"
    );
    for src in &s.sources {
        println!(
            "{:<14} {:>#18x} {:>12} {:>14.1} {:>8} {:>8} {:>10} {:>10}",
            src.name, src.id, src.count, src.rate_per_s, src.p50, src.p99, src.p9999, src.max
        );
    }
    println!(
        "(values: duration µs for kv and syscall sources, 0 for pagecache, dst port for packets)"
    );
    Ok(())
}
