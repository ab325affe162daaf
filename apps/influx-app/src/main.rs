//! `influx-app`: receive telemetry over TCP and write it to influxd.
//!
//! Output (stable, parsed by `figures/`; the same shapes as loom-app):
//! - every `--report-interval-s`: `Records received: r, dropped: d, total received R dropped D`
//!   (dropped = discarded on a full queue or in a failed /write), then
//!   `Points written: w, points/s: x, write errors: e`;
//! - per query: `Query <name> window [t0, t1] µs: <answer>`, with
//!   `--machine-output` also `ANSWER query=<name> t0= t1= <key=value...>`,
//!   then `Query Latency (<name>): <ms> ms`;
//! - with `--complete-data`: `Backlog written: ...` once every point is in influxd;
//! - at exit: `Final: ...` (and `STATS ...` with `--machine-output`), then
//!   `Endpoint CPU: ...` (telemetry::cpu; influxd's own CPU is not included).

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

use endpoint::output::{parse_window, sleep_unless, AnswerLines};
use influx_app::client::Client;
use influx_app::counters::Counters;
use influx_app::ingest::{self, IngestConfig, IngestEnd, TimestampMode};
use influx_app::queries::{self, Query};
use influx_app::receive::{wall_clock_us, Msg};
use influx_app::writer::{self, WriterConfig};
use influx_app::Config;

#[derive(Parser, Debug)]
#[command(
    name = "influx-app",
    about = "Receive telemetry over TCP and write it to InfluxDB (the baseline endpoint)"
)]
struct Cli {
    /// Address to listen on for the telemetry stream.
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: String,
    /// influxd's HTTP API.
    #[arg(long, default_value = "http://127.0.0.1:8086")]
    influx_url: String,
    /// Database to write to (created at start).
    #[arg(long, default_value = "loom")]
    db: String,
    /// Concurrent HTTP writers.
    #[arg(long, default_value_t = 4)]
    influx_connections: usize,
    /// Points per /write request.
    #[arg(long, default_value_t = 5000)]
    batch_size: usize,
    /// Queue everything and write it all before asking (the published
    /// "Influx-complete"): the questions are then asked once, over
    /// [newest − 80 s, newest − 20 s]. Default: drop batches when writes fall
    /// behind and ask periodically, like loom-app.
    #[arg(long)]
    complete_data: bool,
    /// Seconds between progress lines.
    #[arg(long, default_value_t = 10.0)]
    report_interval_s: f64,
    /// Questions to ask (comma separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "rocksdb-p1")]
    query: Vec<Query>,
    /// Seconds between periodic queries.
    #[arg(long, default_value_t = 120.0)]
    query_interval_s: f64,
    /// Number of periodic query rounds.
    #[arg(long, default_value_t = 5)]
    query_count: u32,
    /// Store records under the batch arrival time (wall clock) or their own time.
    #[arg(long, value_enum, default_value = "arrival")]
    timestamps: TimestampMode,
    /// Event timestamps: µs added to every record's time (0 = store record
    /// times as they are; default: now minus the first record's time).
    #[arg(long, allow_negative_numbers = true)]
    event_offset_us: Option<i64>,
    /// Ask the questions once when ingest ends (and, with --complete-data,
    /// everything is written) instead of periodically.
    #[arg(long)]
    query_at_end: bool,
    /// Window for --query-at-end, `T0,T1` in stored µs, inclusive (default: all data).
    #[arg(long, value_parser = parse_window)]
    query_window_us: Option<(u64, u64)>,
    /// Stop ingesting after this many connections have ended.
    #[arg(long)]
    stop_after_connections: Option<u64>,
    /// Also print `ANSWER ...`, `STATEMENT ...` and `STATS ...` lines.
    #[arg(long)]
    machine_output: bool,
    /// Messages the receive queue holds before receivers drop (a message is the frames that
    /// arrived together on one connection, up to 256 KiB) (default mode).
    #[arg(long, default_value_t = Config::default().queue_capacity)]
    queue_capacity: usize,
    /// Largest accepted frame payload in bytes.
    #[arg(long, default_value_t = telemetry::wire::DEFAULT_MAX_PAYLOAD)]
    max_payload_bytes: usize,
}

const WINDOW_START_AGO_US: u64 = 80_000_000;
const WINDOW_END_AGO_US: u64 = 20_000_000;

fn ask(rt: &tokio::runtime::Runtime, client: &Client, q: Query, t0: u64, t1: u64, machine: bool) {
    match rt.block_on(queries::run(client, q, t0, t1)) {
        None => {}
        Some(Ok(a)) => {
            if machine {
                for s in &a.statements {
                    println!("STATEMENT query={} {s}", q.name());
                }
            }
            AnswerLines {
                name: q.name(),
                t0,
                t1,
                text: &a.text,
                machine: &a.machine,
                latency: a.latency,
            }
            .print(machine);
        }
        Some(Err(e)) => println!("Query {} failed: {}", q.name(), influx_app::chain(&e)),
    }
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
    anyhow::ensure!(cli.batch_size > 0, "--batch-size must be positive");
    anyhow::ensure!(
        cli.influx_connections > 0,
        "--influx-connections must be positive"
    );
    anyhow::ensure!(
        cli.event_offset_us.is_none() || cli.timestamps == TimestampMode::Event,
        "--event-offset-us applies to --timestamps event only"
    );
    let cfg = Config::default();

    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("starting the async runtime")?,
    );
    let client = Client::new(&cli.influx_url, &cli.db, cfg.request_timeout)?
        .with_query_timeout(cfg.query_timeout);
    // influxd may come up later: writes create the database when it is missing.
    if let Err(e) = rt.block_on(client.create_database()) {
        log::error!(
            "cannot create database {} at {}: {} (writes will retry)",
            cli.db,
            cli.influx_url,
            influx_app::chain(&e)
        );
    }

    let listener =
        TcpListener::bind(&cli.addr).with_context(|| format!("listening on {}", cli.addr))?;
    println!(
        "influx-app listening on {}, influxd {} db {}, {} connections, batch {} points, {}, queries {:?}, timestamps {:?}",
        listener.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        cli.influx_url,
        cli.db,
        cli.influx_connections,
        cli.batch_size,
        if cli.complete_data { "complete data (queue unbounded)" } else { "dropping when behind" },
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
    let (tx, rx) = if cli.complete_data {
        crossbeam_channel::unbounded()
    } else {
        crossbeam_channel::bounded(cli.queue_capacity)
    };
    let mut recv_cfg = endpoint::ReceiveConfig::new(cli.max_payload_bytes);
    if cli.complete_data {
        // Everything is kept until written: no bound in bytes either.
        recv_cfg.max_queued_bytes = u64::MAX;
    }
    let pool = endpoint::BufferPool::new(64, recv_cfg.group_bytes + (64 << 10));
    {
        let (recv, pool) = (counters.recv.clone(), pool.clone());
        std::thread::Builder::new()
            .name("listener".into())
            .spawn(move || endpoint::listen::<Msg>(listener, tx, recv, pool, recv_cfg))
            .context("starting the listener")?;
    }

    let (body_tx, body_rx) =
        tokio::sync::mpsc::channel(cli.influx_connections * cfg.bodies_per_connection);
    let writers = writer::spawn(
        rt.handle(),
        client.clone(),
        WriterConfig {
            connections: cli.influx_connections,
            failure_backoff: cfg.failure_backoff,
            error_log_interval: cfg.error_log_interval,
        },
        body_rx,
        counters.clone(),
    );
    let ingest = {
        let counters = counters.clone();
        let shutdown = shutdown.clone();
        let icfg = IngestConfig {
            timestamps: cli.timestamps,
            event_offset_us: cli.event_offset_us,
            batch_size: cli.batch_size,
            max_linger: cfg.max_linger,
            stop_after_connections: cli.stop_after_connections,
        };
        std::thread::Builder::new()
            .name("encoder".into())
            .spawn(move || ingest::run(rx, pool, body_tx, counters, shutdown, icfg))
            .context("starting the encoder thread")?
    };

    let reporter = {
        let counters = counters.clone();
        let finished = finished.clone();
        let interval = Duration::from_secs_f64(cli.report_interval_s);
        std::thread::Builder::new()
            .name("report".into())
            .spawn(move || {
                let (mut last_r, mut last_d, mut last_w) = (0, 0, 0);
                while sleep_unless(&finished, interval) {
                    let r = Counters::get(&counters.recv.records_received);
                    let d = Counters::get(&counters.recv.records_dropped);
                    let w = Counters::get(&counters.points_written);
                    println!(
                        "Records received: {}, dropped: {}, total received {r} dropped {d}",
                        r - last_r,
                        d - last_d
                    );
                    println!(
                        "Points written: {}, points/s: {:.0}, total written {w}, write errors {}",
                        w - last_w,
                        (w - last_w) as f64 / interval.as_secs_f64(),
                        Counters::get(&counters.write_errors)
                    );
                    (last_r, last_d, last_w) = (r, d, w);
                }
            })
            .context("starting the reporter")?
    };

    let periodic: Vec<Query> = cli
        .query
        .iter()
        .copied()
        .filter(|q| *q != Query::ProbeEffect)
        .collect();
    // --complete-data asks once, after the backlog is written (below).
    let mut query_thread = None;
    if !cli.query_at_end && !cli.complete_data && !periodic.is_empty() {
        let (rt, client, counters, finished, periodic) = (
            rt.clone(),
            client.clone(),
            counters.clone(),
            finished.clone(),
            periodic.clone(),
        );
        let interval = Duration::from_secs_f64(cli.query_interval_s);
        let (count, machine, timestamps) = (cli.query_count, cli.machine_output, cli.timestamps);
        query_thread = Some(
            std::thread::Builder::new()
                .name("query".into())
                .spawn(move || {
                    for _ in 0..count {
                        if !sleep_unless(&finished, interval) {
                            return;
                        }
                        // Arrival mode: the wall clock; event mode: the newest stored time.
                        let now = match timestamps {
                            TimestampMode::Arrival => wall_clock_us(),
                            TimestampMode::Event => Counters::get(&counters.now_us),
                        };
                        let t0 = now.saturating_sub(WINDOW_START_AGO_US);
                        let t1 = now.saturating_sub(WINDOW_END_AGO_US);
                        for &q in &periodic {
                            ask(&rt, &client, q, t0, t1, machine);
                        }
                    }
                })
                .context("starting the query thread")?,
        );
    }

    let report = ingest
        .join()
        .map_err(|_| anyhow::anyhow!("the encoder thread panicked"))?;
    match report.end {
        IngestEnd::Shutdown => println!("shutting down (signal)"),
        IngestEnd::ConnectionsEnded => println!("ingest ended: connection limit reached"),
    }
    if let Some(off) = report.event_offset_us {
        println!("event timestamps stored with offset {off} µs");
    }
    // Every body is queued; the writers end once the queue is empty.
    let pending = Counters::get(&counters.points_encoded)
        .saturating_sub(Counters::get(&counters.points_written))
        .saturating_sub(Counters::get(&counters.write_failed_points));
    if pending > 0 {
        println!("waiting for the writers: {pending} points queued");
    }
    for w in writers {
        if let Err(e) = rt.block_on(w) {
            log::error!("a writer task failed: {e}");
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let written = Counters::get(&counters.points_written);
    if cli.complete_data {
        let backlog = report
            .last_connection_end
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        let first = Counters::get(&counters.recv.first_arrival_us);
        let span = (wall_clock_us().saturating_sub(first)) as f64 / 1e6;
        println!(
            "Backlog written: {written} points in influxd {backlog:.3} s after the last connection ended; {:.0} points/s from the first batch received to the last point written ({span:.3} s)",
            if first > 0 && span > 0.0 { written as f64 / span } else { 0.0 }
        );
    }
    finished.store(true, Ordering::SeqCst);
    let _ = reporter.join();
    // A question still in flight is answered before the app exits.
    if let Some(q) = query_thread {
        let _ = q.join();
    }

    let now = Counters::get(&counters.now_us);
    if cli.query_at_end {
        let (t0, t1) = cli.query_window_us.unwrap_or((0, now));
        for &q in &cli.query {
            ask(&rt, &client, q, t0, t1, cli.machine_output);
        }
    } else if cli.complete_data {
        // The published Influx-complete asks once, over the phase window
        // ending at the newest data (the replay ended long ago).
        let t0 = now.saturating_sub(WINDOW_START_AGO_US);
        let t1 = now.saturating_sub(WINDOW_END_AGO_US);
        for &q in &periodic {
            ask(&rt, &client, q, t0, t1, cli.machine_output);
        }
    }

    let c = &counters;
    let received = Counters::get(&c.recv.records_received);
    let dropped = Counters::get(&c.recv.records_dropped);
    println!(
        "Final: records received {received}, dropped {dropped} ({:.3} %), points written {written} in {} writes, write errors {} ({} points), batches received {} dropped {}, connections {} (bad {}), timestamps raised to keep order {}, moved to the next µs {}, data time {now} µs, wall {wall:.3} s",
        if received > 0 { dropped as f64 * 100.0 / received as f64 } else { 0.0 },
        Counters::get(&c.writes),
        Counters::get(&c.write_errors),
        Counters::get(&c.write_failed_points),
        Counters::get(&c.recv.batches_received),
        Counters::get(&c.recv.batches_dropped),
        Counters::get(&c.recv.connections),
        Counters::get(&c.recv.bad_connections),
        report.raised,
        report.spilled,
    );
    if report.saturated > 0 {
        log::warn!(
            "{} field values above i64::MAX were written as i64::MAX",
            report.saturated
        );
    }
    if cli.machine_output {
        println!(
            "STATS received={received} dropped={dropped} written={written} write_errors={} bad_connections={}",
            Counters::get(&c.write_errors),
            Counters::get(&c.recv.bad_connections)
        );
    }
    println!("{}", telemetry::cpu::exit_line(received));
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_flags_name_allowed_values() {
        let cli = Cli::try_parse_from([
            "influx-app",
            "--query",
            "rocksdb-p2,valkey-p3",
            "--timestamps",
            "event",
            "--event-offset-us",
            "-5",
        ])
        .unwrap();
        assert_eq!(cli.query, vec![Query::RocksdbP2, Query::ValkeyP3]);
        assert_eq!(cli.event_offset_us, Some(-5));
        let err = Cli::try_parse_from(["influx-app", "--timestamps", "wall"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--timestamps") && err.contains("arrival") && err.contains("event"));
        let err = Cli::try_parse_from(["influx-app", "--query", "rocksdb-p9"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--query") && err.contains("valkey-p1"),
            "{err}"
        );
    }
}
