//! `loom-app`: the Loom telemetry endpoint.
//!
//! Listens on `--addr`; one receiving thread per connection feeds a bounded
//! queue; the single ingest thread owns the `loom::Writer`, declares each
//! source with its range index on first sight and syncs every few ms so
//! queries see fresh data. A full queue drops batches (counted), never slowing
//! senders. A query thread asks the workload's questions from a
//! `loom::Reader`.
//!
//! Output (stable, parsed by `figures/`):
//! - every `--report-interval-s`: `Records received: r, dropped: d, total received R dropped D`
//!   (`r`/`d` during the interval; received counts every record of a valid frame,
//!   dropped the part discarded on a full queue);
//! - per query: its answer, then `Query Latency (<name>): <ms> ms`;
//! - with `--machine-output`, also `ANSWER query=<name> t0=<µs> t1=<µs> <key=value...>`;
//! - at exit: `Final: ...` summary.

mod counters;
mod ingest;
mod queries;
mod receive;
mod sources;

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use loom::Reader;

use counters::Counters;
use ingest::{IngestConfig, IngestEnd, TimestampMode};
use queries::Query;

#[derive(Parser, Debug)]
#[command(
    name = "loom-app",
    about = "Receive telemetry over TCP and store it in Loom"
)]
struct Cli {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: String,
    /// Store directory (default: a fresh directory under the repo's tmp-data/,
    /// deleted at exit unless --keep-data).
    #[arg(long, alias = "mach-path")]
    loom_path: Option<PathBuf>,
    /// Keep the default store directory at exit.
    #[arg(long)]
    keep_data: bool,
    /// Seconds between progress lines.
    #[arg(long, default_value_t = 10.0)]
    report_interval_s: f64,
    /// Questions to ask (comma separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "rocksdb-p1")]
    query: Vec<Query>,
    /// Seconds between periodic queries.
    #[arg(long, default_value_t = 120.0)]
    query_interval_s: f64,
    /// Number of periodic query rounds (ablation: repetitions after the cut-off).
    #[arg(long, default_value_t = 5)]
    query_count: u32,
    /// Ablation lookback S in seconds: ingest 120 + S + 5 s of data, then count
    /// over the 120 s window ending S + 5 s before the newest data.
    #[arg(long, default_value_t = 20)]
    ablation_lookback: u64,
    /// Store records under their arrival time (µs since app start) or their own timestamp.
    #[arg(long, value_enum, default_value = "arrival")]
    timestamps: TimestampMode,
    /// Ask the questions once when ingest ends (see --stop-after-connections)
    /// instead of periodically.
    #[arg(long)]
    query_at_end: bool,
    /// Window for --query-at-end, `T0,T1` in µs inclusive (default: all data).
    #[arg(long, value_parser = parse_window)]
    query_window_us: Option<(u64, u64)>,
    /// Stop ingesting after this many connections have ended.
    #[arg(long)]
    stop_after_connections: Option<u64>,
    /// Also print `ANSWER ...` lines for scripts and tests.
    #[arg(long)]
    machine_output: bool,
    /// Batches the ingest queue holds before receivers drop.
    #[arg(long, default_value_t = 4096)]
    queue_capacity: usize,
    /// Largest accepted frame payload in bytes.
    #[arg(long, default_value_t = telemetry::wire::DEFAULT_MAX_PAYLOAD)]
    max_payload_bytes: usize,
    /// Publish ingested data to readers at least every this many ms.
    #[arg(long, default_value_t = 5)]
    sync_interval_ms: u64,
}

/// Parses `T0,T1` (µs) for `--query-window-us`.
fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("expected T0,T1 in µs, got {s:?}"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|e| format!("{x:?} is not a µs count: {e}"))
    };
    let (t0, t1) = (p(a)?, p(b)?);
    if t0 > t1 {
        return Err(format!("T0 {t0} is after T1 {t1}"));
    }
    Ok((t0, t1))
}

const WINDOW_START_AGO_US: u64 = 80_000_000;
const WINDOW_END_AGO_US: u64 = 20_000_000;
const ABLATION_WINDOW_US: u64 = 120_000_000;
const ABLATION_MARGIN_US: u64 = 5_000_000;

fn print_answer(reader: &Reader, q: Query, t0: u64, t1: u64, machine: bool) {
    match queries::run(reader, q, t0, t1) {
        None => {}
        Some(Ok(a)) => {
            println!("Query {} window [{t0}, {t1}] µs: {}", q.name(), a.text);
            if machine {
                println!("ANSWER query={} t0={t0} t1={t1} {}", q.name(), a.machine);
            }
            println!(
                "Query Latency ({}): {:.3} ms",
                q.name(),
                a.latency.as_secs_f64() * 1e3
            );
        }
        Some(Err(e)) => println!("Query {} failed: {e}", q.name()),
    }
}

fn sleep_unless(flag: &AtomicBool, d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if flag.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
    }
    !flag.load(Ordering::Relaxed)
}

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    anyhow::ensure!(
        cli.report_interval_s > 0.0,
        "--report-interval-s must be positive"
    );
    anyhow::ensure!(
        cli.query_interval_s > 0.0,
        "--query-interval-s must be positive"
    );
    anyhow::ensure!(cli.queue_capacity > 0, "--queue-capacity must be positive");

    let (store_dir, temp) = match &cli.loom_path {
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
    let (writer, reader) = loom::open(&store_dir, loom::Config::default())
        .with_context(|| format!("opening the store in {}", store_dir.display()))?;
    let listener =
        TcpListener::bind(&cli.addr).with_context(|| format!("listening on {}", cli.addr))?;
    println!(
        "loom-app listening on {}, store {}, queries {:?}, timestamps {:?}",
        listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        store_dir.display(),
        cli.query.iter().map(|q| q.name()).collect::<Vec<_>>(),
        cli.timestamps
    );

    let start = Instant::now();
    let counters = Arc::new(Counters::default());
    let shutdown = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    {
        let shutdown = shutdown.clone();
        ctrlc::set_handler(move || shutdown.store(true, Ordering::SeqCst))
            .context("installing the Ctrl-C handler")?;
    }
    let (tx, rx) = crossbeam_channel::bounded(cli.queue_capacity);
    {
        let counters = counters.clone();
        let max_payload = cli.max_payload_bytes;
        std::thread::Builder::new()
            .name("listener".into())
            .spawn(move || receive::listen(listener, tx, counters, start, max_payload))
            .context("starting the listener")?;
    }

    let ablation: Vec<Query> = cli
        .query
        .iter()
        .copied()
        .filter(|q| q.ablation_mode().is_some())
        .collect();
    let periodic: Vec<Query> = cli
        .query
        .iter()
        .copied()
        .filter(|q| q.ablation_mode().is_none() && *q != Query::ProbeEffect)
        .collect();
    let lookback_us = cli.ablation_lookback * 1_000_000;
    let stop_at_us = (!ablation.is_empty() && !cli.query_at_end)
        .then_some(ABLATION_WINDOW_US + lookback_us + ABLATION_MARGIN_US);
    if let Some(cut) = stop_at_us {
        println!(
            "ablation: ingesting until {:.0} s of data, then counting KV reads > 80 µs in the 120 s window ending {} s before",
            cut as f64 / 1e6,
            cli.ablation_lookback + 5
        );
    }

    let ingest = {
        let counters = counters.clone();
        let shutdown = shutdown.clone();
        let cfg = IngestConfig {
            timestamps: cli.timestamps,
            sync_interval: Duration::from_millis(cli.sync_interval_ms),
            stop_after_connections: cli.stop_after_connections,
            stop_at_us,
        };
        std::thread::Builder::new()
            .name("ingest".into())
            .spawn(move || ingest::run(writer, rx, counters, shutdown, cfg))
            .context("starting the ingest thread")?
    };

    {
        let counters = counters.clone();
        let finished = finished.clone();
        let interval = Duration::from_secs_f64(cli.report_interval_s);
        std::thread::Builder::new()
            .name("report".into())
            .spawn(move || {
                let (mut last_r, mut last_d) = (0, 0);
                while sleep_unless(&finished, interval) {
                    let r = Counters::get(&counters.records_received);
                    let d = Counters::get(&counters.records_dropped);
                    println!(
                        "Records received: {}, dropped: {}, total received {r} dropped {d}",
                        r - last_r,
                        d - last_d
                    );
                    (last_r, last_d) = (r, d);
                }
            })
            .context("starting the reporter")?;
    }

    if !cli.query_at_end && !periodic.is_empty() {
        let reader = reader.clone();
        let counters = counters.clone();
        let finished = finished.clone();
        let interval = Duration::from_secs_f64(cli.query_interval_s);
        let (count, machine, timestamps) = (cli.query_count, cli.machine_output, cli.timestamps);
        std::thread::Builder::new()
            .name("query".into())
            .spawn(move || {
                for _ in 0..count {
                    if !sleep_unless(&finished, interval) {
                        return;
                    }
                    // Arrival mode: the current arrival time (µs since app
                    // start); event mode: the newest event timestamp stored.
                    let now = match timestamps {
                        TimestampMode::Arrival => start.elapsed().as_micros() as u64,
                        TimestampMode::Event => Counters::get(&counters.now_us),
                    };
                    let t0 = now.saturating_sub(WINDOW_START_AGO_US);
                    let t1 = now.saturating_sub(WINDOW_END_AGO_US);
                    for &q in &periodic {
                        print_answer(&reader, q, t0, t1, machine);
                    }
                }
            })
            .context("starting the query thread")?;
    }

    let (writer, end) = ingest
        .join()
        .map_err(|_| anyhow::anyhow!("the ingest thread panicked"))?;
    finished.store(true, Ordering::SeqCst);
    let now = Counters::get(&counters.now_us);
    match end {
        IngestEnd::Shutdown => println!("shutting down (signal)"),
        IngestEnd::ConnectionsEnded => println!("ingest ended: connection limit reached"),
        IngestEnd::CutOff => println!(
            "ingest stopped at {:.3} s of data for the ablation query",
            now as f64 / 1e6
        ),
    }
    if cli.query_at_end {
        let (t0, t1) = cli.query_window_us.unwrap_or((0, now));
        for &q in &cli.query {
            print_answer(&reader, q, t0, t1, cli.machine_output);
        }
    } else if end == IngestEnd::CutOff {
        let t1 = now.saturating_sub(lookback_us + ABLATION_MARGIN_US);
        let t0 = t1.saturating_sub(ABLATION_WINDOW_US);
        for _ in 0..cli.query_count.max(1) {
            for &q in &ablation {
                println!(
                    "Ablation {} lookback {} s:",
                    q.name(),
                    cli.ablation_lookback
                );
                print_answer(&reader, q, t0, t1, cli.machine_output);
            }
        }
    }

    let c = &counters;
    let received = Counters::get(&c.records_received);
    let dropped = Counters::get(&c.records_dropped);
    println!(
        "Final: records received {received}, dropped {dropped} ({:.3} %), ingested {}, not ingested after ingest stopped {}, batches received {} dropped {}, connections {} (bad {}), timestamps raised to keep order {}, data time {:.3} s, wall {:.3} s",
        if received > 0 { dropped as f64 * 100.0 / received as f64 } else { 0.0 },
        Counters::get(&c.records_ingested),
        Counters::get(&c.records_skipped),
        Counters::get(&c.batches_received),
        Counters::get(&c.batches_dropped),
        Counters::get(&c.connections),
        Counters::get(&c.bad_connections),
        Counters::get(&c.records_clamped),
        now as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    if cli.machine_output {
        println!(
            "STATS received={received} dropped={dropped} ingested={} bad_connections={}",
            Counters::get(&c.records_ingested),
            Counters::get(&c.bad_connections)
        );
    }
    let stats = writer.stats();
    writer.close().context("closing the store")?;
    println!(
        "store: {} records, {} chunks, {} blocks flushed",
        stats.records, stats.chunks, stats.blocks_flushed
    );
    if let Some(t) = temp {
        if cli.keep_data {
            let p = t.keep();
            println!("store kept in {}", p.display());
        } else {
            drop(t);
        }
    }
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_parsing() {
        assert_eq!(parse_window("3,15"), Ok((3, 15)));
        assert_eq!(parse_window(" 0 , 0 "), Ok((0, 0)));
        assert!(parse_window("15,3").is_err());
        assert!(parse_window("15").is_err());
        assert!(parse_window("a,3").is_err());
    }

    #[test]
    fn flags_parse_and_name_allowed_values() {
        let cli = Cli::try_parse_from([
            "loom-app",
            "--mach-path",
            "/tmp/x",
            "--query",
            "rocksdb-p2,ablation-timerange",
            "--timestamps",
            "event",
        ])
        .unwrap();
        assert_eq!(cli.query, vec![Query::RocksdbP2, Query::AblationTimerange]);
        assert_eq!(cli.loom_path, Some(PathBuf::from("/tmp/x")));
        let err = Cli::try_parse_from(["loom-app", "--timestamps", "wall"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--timestamps") && err.contains("arrival") && err.contains("event"));
    }
}
