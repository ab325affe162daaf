//! `data-stats FILE`: per-source record counts, rates and value percentiles,
//! then how far out of event-time order records arrive (what sizes
//! loom-app's `--reorder-window-ms`; see `replay::Disorder`).

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
    let s = replay::stats_of_file(&cli.file)
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
    let d = &s.disorder;
    let pct = |n: u64| n as f64 * 100.0 / d.records.max(1) as f64;
    println!(
        "disorder: {} of {} records ({:.3} %) arrive behind the newest event time seen; lateness p50 {} µs, p99 {} µs, p99.9 {} µs, p99.99 {} µs, max {} µs",
        d.behind,
        d.records,
        pct(d.behind),
        d.p50,
        d.p99,
        d.p999,
        d.p9999,
        d.max
    );
    let windows: Vec<String> = d
        .later_than
        .iter()
        .map(|&(w, n)| format!("{w} ms {n} ({:.4} %)", pct(n)))
        .collect();
    println!(
        "disorder: records later than a reorder window of {}",
        windows.join(", ")
    );
    let per: Vec<String> = d
        .per_source_max
        .iter()
        .map(|(name, m)| format!("{name} {:.1} ms", *m as f64 / 1e3))
        .collect();
    println!(
        "disorder: largest lateness within one source: {}",
        per.join(", ")
    );
    Ok(())
}
