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
//!   `Endpoint CPU: ...` (`telemetry::cpu_exit_line`; influxd's own CPU is not included);
//! - with `--ready-file PATH`, once it listens: `{"pid":…,"tcp":"ip:port"}`
//!   in PATH (written atomically), so callers can pass port 0.
//!
//! The skeleton (Ctrl-C stop flag, report thread, periodic questions, the
//! ready file) is `endpoint::app`, shared with loom-app.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

use endpoint::app::{
    drop_percent, phase_window, spawn, spawn_periodic, spawn_reporter, write_ready_file, Periodic,
    Stop,
};
use endpoint::output::{parse_window, AnswerLines};
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
    /// Once the telemetry port is bound, write `{"pid":…,"tcp":"ip:port"}`
    /// here (temporary file, then rename), so callers can pass port 0.
    #[arg(long, value_name = "PATH")]
    ready_file: Option<PathBuf>,
    /// Messages the receive queue holds before receivers drop (a message is the frames that
    /// arrived together on one connection, up to 256 KiB) (default mode).
    #[arg(long, default_value_t = Config::default().queue_capacity)]
    queue_capacity: usize,
    /// Largest accepted frame payload in bytes.
    #[arg(long, default_value_t = telemetry::wire::DEFAULT_MAX_PAYLOAD)]
    max_payload_bytes: usize,
}

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

impl Cli {
    /// Checks the relations clap cannot express.
    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.report_interval_s > 0.0,
            "--report-interval-s must be positive"
        );
        anyhow::ensure!(
            self.query_interval_s > 0.0,
            "--query-interval-s must be positive"
        );
        anyhow::ensure!(self.queue_capacity > 0, "--queue-capacity must be positive");
        anyhow::ensure!(self.batch_size > 0, "--batch-size must be positive");
        anyhow::ensure!(
            self.influx_connections > 0,
            "--influx-connections must be positive"
        );
        anyhow::ensure!(
            self.event_offset_us.is_none() || self.timestamps == TimestampMode::Event,
            "--event-offset-us applies to --timestamps event only"
        );
        Ok(())
    }

    /// Questions asked periodically (or once after the backlog with
    /// `--complete-data`): all but the probe-effect one.
    fn periodic(&self) -> Vec<Query> {
        self.query
            .iter()
            .copied()
            .filter(|q| *q != Query::ProbeEffect)
            .collect()
    }
}

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    cli.validate()?;
    let cfg = Config::default();
    let stop = Stop::new();
    stop.on_ctrl_c().context("installing the Ctrl-C handler")?;

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

    let start = Instant::now();
    let counters = Arc::new(Counters::default());
    let finished = Arc::new(AtomicBool::new(false));
    let rx = start_listener(&cli, &counters)?;
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
        let (counters, shutdown) = (counters.clone(), stop.flag());
        let icfg = IngestConfig {
            timestamps: cli.timestamps,
            event_offset_us: cli.event_offset_us,
            batch_size: cli.batch_size,
            max_linger: cfg.max_linger,
            stop_after_connections: cli.stop_after_connections,
        };
        let (rx, pool) = rx;
        spawn("encoder", move || {
            ingest::run(rx, pool, body_tx, counters, shutdown, icfg)
        })
        .context("starting the encoder thread")?
    };
    let reporter = start_reporter(&cli, &counters, &finished)?;
    let query_thread = start_questions(&cli, &rt, &client, &counters, &finished)?;

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
    if cli.complete_data {
        print_backlog(&counters, &report);
    }
    finished.store(true, Ordering::SeqCst);
    let _ = reporter.join();
    // A question still in flight is answered before the app exits.
    if let Some(q) = query_thread {
        let _ = q.join();
    }

    ask_at_end(&cli, &rt, &client, Counters::get(&counters.now_us));
    print_final(&cli, &counters, &report, wall);
    let received = Counters::get(&counters.recv.records_received);
    println!("{}", telemetry::cpu_exit_line(received));
    std::process::exit(0)
}

/// `--query-at-end`: every question over `--query-window-us` (default all
/// data); `--complete-data`: the periodic questions once, over the phase
/// window ending at the newest data `now` (the replay ended long ago), as
/// the published Influx-complete asks.
fn ask_at_end(cli: &Cli, rt: &tokio::runtime::Runtime, client: &Client, now: u64) {
    if cli.query_at_end {
        let (t0, t1) = cli.query_window_us.unwrap_or((0, now));
        for &q in &cli.query {
            ask(rt, client, q, t0, t1, cli.machine_output);
        }
    } else if cli.complete_data {
        let (t0, t1) = phase_window(now);
        for q in cli.periodic() {
            ask(rt, client, q, t0, t1, cli.machine_output);
        }
    }
}

/// Binds `--addr`, prints the listening line, writes `--ready-file` and
/// starts the listener thread; returns the receive queue and buffer pool
/// for the encoder.
fn start_listener(
    cli: &Cli,
    counters: &Arc<Counters>,
) -> anyhow::Result<(crossbeam_channel::Receiver<Msg>, endpoint::BufferPool)> {
    let listener =
        TcpListener::bind(&cli.addr).with_context(|| format!("listening on {}", cli.addr))?;
    let tcp = listener
        .local_addr()
        .with_context(|| format!("listening on {}", cli.addr))?;
    println!(
        "influx-app listening on {tcp}, influxd {} db {}, {} connections, batch {} points, {}, queries {:?}, timestamps {:?}",
        cli.influx_url,
        cli.db,
        cli.influx_connections,
        cli.batch_size,
        if cli.complete_data { "complete data (queue unbounded)" } else { "dropping when behind" },
        cli.query.iter().map(|q| q.name()).collect::<Vec<_>>(),
        cli.timestamps
    );
    if let Some(path) = &cli.ready_file {
        write_ready_file(path, &[("tcp", Some(tcp))])
            .with_context(|| format!("--ready-file {}", path.display()))?;
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
    let (recv, p) = (counters.recv.clone(), pool.clone());
    spawn("listener", move || {
        endpoint::listen::<Msg>(listener, tx, recv, p, recv_cfg)
    })
    .context("starting the listener")?;
    Ok((rx, pool))
}

/// Two progress lines every `--report-interval-s`: what arrived, and what
/// was written to influxd.
fn start_reporter(
    cli: &Cli,
    counters: &Arc<Counters>,
    finished: &Arc<AtomicBool>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let counters = counters.clone();
    let (mut last_r, mut last_d, mut last_w) = (0, 0, 0);
    let tick = move |interval: Duration| {
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
    };
    let interval = Duration::from_secs_f64(cli.report_interval_s);
    spawn_reporter(finished.clone(), interval, tick).context("starting the reporter")
}

/// The periodic questions; none with `--query-at-end` or `--complete-data`
/// (which asks once, after the backlog is written).
fn start_questions(
    cli: &Cli,
    rt: &Arc<tokio::runtime::Runtime>,
    client: &Client,
    counters: &Arc<Counters>,
    finished: &Arc<AtomicBool>,
) -> anyhow::Result<Option<std::thread::JoinHandle<()>>> {
    let periodic = cli.periodic();
    if cli.query_at_end || cli.complete_data || periodic.is_empty() {
        return Ok(None);
    }
    let (rt, client, counters) = (rt.clone(), client.clone(), counters.clone());
    let (machine, timestamps) = (cli.machine_output, cli.timestamps);
    // Arrival mode: the wall clock; event mode: the newest stored time.
    let now = move || match timestamps {
        TimestampMode::Arrival => wall_clock_us(),
        TimestampMode::Event => Counters::get(&counters.now_us),
    };
    let ask_all = move |t0, t1| {
        for &q in &periodic {
            ask(&rt, &client, q, t0, t1, machine);
        }
    };
    let p = Periodic {
        interval: Duration::from_secs_f64(cli.query_interval_s),
        count: cli.query_count,
    };
    spawn_periodic(finished.clone(), p, now, ask_all)
        .map(Some)
        .context("starting the query thread")
}

/// `--complete-data`: when the backlog was written and at what rate.
fn print_backlog(counters: &Counters, report: &ingest::IngestReport) {
    let written = Counters::get(&counters.points_written);
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

/// The `Final:` line, and `STATS` with `--machine-output`.
fn print_final(cli: &Cli, c: &Counters, report: &ingest::IngestReport, wall: f64) {
    let received = Counters::get(&c.recv.records_received);
    let dropped = Counters::get(&c.recv.records_dropped);
    let written = Counters::get(&c.points_written);
    let now = Counters::get(&c.now_us);
    println!(
        "Final: records received {received}, dropped {dropped} ({:.3} %), points written {written} in {} writes, write errors {} ({} points), batches received {} dropped {}, connections {} (bad {}), timestamps raised to keep order {}, moved to the next µs {}, data time {now} µs, wall {wall:.3} s",
        drop_percent(dropped, received),
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
