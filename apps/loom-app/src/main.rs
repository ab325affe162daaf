//! `loom-app`: the Loom telemetry endpoint.
//!
//! Listens on `--addr`; one receiving thread per connection feeds a bounded
//! queue; the single ingest thread owns the `loom::Writer`, declares each
//! source by its data-model schema on first sight, publishes to readers
//! every few ms and makes data durable every `--persist-interval-ms`. A full
//! queue drops batches (counted), never slowing senders. A query thread asks
//! the named questions (`--question`, none by default) from a
//! `loom::Reader`. The store (`--loom-path`, default the user's data
//! directory, see `store::default_dir`) is reopened and appended to and
//! never deleted; `--temp-store` gives experiments a fresh one deleted at
//! exit. `--tls-cert/--tls-key` make the TCP ingest port TLS only.
//!
//! Output (stable, parsed by `figures/`):
//! - every `--report-interval-s`: `Records received: r, dropped: d, total
//!   received R dropped D, not stored n, late m, otlp ...` (`r`/`d`/`n`/`m`
//!   during the interval; received counts every record of a valid frame and
//!   every OTLP item, dropped the part discarded on a full queue, not stored
//!   what the engine refused, late the records refused because they were
//!   older than their source's newest stored record: a record's time is
//!   never moved);
//! - per query: its answer, then `Query Latency (<name>): <ms> ms`;
//! - with `--machine-output`, also `ANSWER query=<name> t0=<µs> t1=<µs> <key=value...>`;
//! - at exit: `Final: ...` summary, then `Endpoint CPU: ...` (telemetry::cpu).
//!
//! The InfluxDB 1.x query API (`--http`, default 127.0.0.1:8186) answers
//! InfluxQL from reader threads while ingest goes on. OTLP receivers
//! (`--otlp-grpc`, default 127.0.0.1:4317; `--otlp-http`, default
//! 127.0.0.1:4318) take OpenTelemetry spans, logs and metrics into the same
//! store (see `otlp_ingest`); the progress line ends with their counts.

mod cli;
mod counters;
mod exporting;
mod http;
mod ingest;
mod intake_log;
mod otlp_ingest;
mod queries;
mod receive;
mod reorder;
mod report;
mod schedule;
mod source_table;
mod sources;
mod store;

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

use cli::Cli;
use counters::Counters;
use ingest::{IngestConfig, IngestEnd};
use queries::Query;
use schedule::{print_answer, ABLATION_MARGIN_US, ABLATION_WINDOW_US};

/// Idle payload buffers kept for the receivers.
const RECYCLED_BUFFERS: usize = 64;

fn spawn<F: FnOnce() + Send + 'static>(name: &str, f: F) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .with_context(|| format!("starting the {name} thread"))?;
    Ok(())
}

/// Refuses a telemetry-stream address that other hosts can reach unless a
/// token guards it.
fn stream_addr_allowed(addr: &str, token: bool) -> anyhow::Result<()> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .with_context(|| format!("--addr {addr}"))?
        .collect();
    anyhow::ensure!(
        token || addrs.iter().all(|a| a.ip().is_loopback()),
        "--addr {addr}: a non-loopback address needs --auth-token-file (senders present the token in their HELLO)"
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    cli.validate()?;
    let store::Store {
        writer,
        reader,
        dir,
        temp,
    } = store::open(&cli)?;
    let resume_after_us = reader
        .sources()
        .into_iter()
        .filter_map(|id| reader.latest_timestamp(id))
        .max()
        .unwrap_or(0);
    let token = http::auth_token(&cli)?;
    stream_addr_allowed(&cli.addr, token.is_some())?;
    let tls = match (&cli.tls_cert, &cli.tls_key) {
        (Some(cert), Some(key)) => Some(endpoint::ServerTls::from_pem_files(cert, key)?),
        _ => None,
    };
    // Before the listening line: a supervisor (or a test) that stops
    // loom-app as soon as it listens gets the clean SIGINT stop.
    let shutdown = Arc::new(AtomicBool::new(false));
    {
        let shutdown = shutdown.clone();
        ctrlc::set_handler(move || shutdown.store(true, Ordering::SeqCst))
            .context("installing the Ctrl-C handler")?;
    }
    let listener =
        TcpListener::bind(&cli.addr).with_context(|| format!("listening on {}", cli.addr))?;
    println!(
        "loom-app listening on {}, store {}, queries {:?}, timestamps {:?}",
        listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        dir.display(),
        cli.query.iter().map(|q| q.name()).collect::<Vec<_>>(),
        cli.timestamps
    );
    if let Some(cert) = &cli.tls_cert {
        println!("TCP ingest is TLS only (certificate {})", cert.display());
    }

    let http_server = http::start(&cli, reader.clone())?;
    let exporting = exporting::start(&cli, reader.clone())?;
    let start = Instant::now();
    let series = Arc::new(endpoint::SeriesLimit::new(cli.max_series));
    let counters = Arc::new(Counters {
        series: series.clone(),
        ..Counters::default()
    });
    let finished = Arc::new(AtomicBool::new(false));
    let (tx, rx) = crossbeam_channel::bounded::<receive::Msg>(cli.queue_capacity);
    let recv_cfg = endpoint::ReceiveConfig {
        max_queued_bytes: cli.queue_max_bytes,
        auth_token: token.clone(),
        receiver_name: format!("loom-app {}", env!("CARGO_PKG_VERSION")),
        tls,
        ..endpoint::ReceiveConfig::new(cli.max_payload_bytes)
    };
    // Enough idle buffers for every receiver's next group while ingest keeps up.
    let pool = endpoint::BufferPool::new(RECYCLED_BUFFERS, recv_cfg.group_bytes + (64 << 10));
    let snap = reader.snapshot();
    let schemas = snap.schemas();
    series.count_existing(schemas.len() as u64);
    let registry = Arc::new(otlp::Registry::with_limit(
        series.clone(),
        schemas.into_iter().map(|(id, s)| (id.0, s)),
    ));
    drop(snap);
    let otlp_stage = otlp_ingest::OtlpStage::new(
        registry.clone(),
        cli.otlp_reorder_window_ms.saturating_mul(1000),
    );
    let token = http::auth_token(&cli)?;
    let mark = Arc::new(endpoint::DurableMark::new());
    // The intake log is opened before the servers: what an earlier run
    // acknowledged and did not store yet is stored first.
    let intake_log = match cli.otlp_ack {
        otlp_ingest::AckMode::Durable => Some(
            intake_log::IntakeLog::open(&dir.join("otlp-intake"), mark.clone())
                .context("opening the OTLP intake log")?,
        ),
        otlp_ingest::AckMode::Queued => None,
    };
    let intake = Arc::new(otlp_ingest::Intake::new(
        registry,
        otlp::Config {
            max_record_bytes: writer.max_record_size(),
            ..otlp::Config::default()
        },
        tx.clone(),
        counters.clone(),
        token.clone(),
        (
            cli.otlp_max_body_bytes,
            Duration::from_millis(cli.otlp_read_timeout_ms),
        ),
        otlp_ingest::Acks {
            mode: cli.otlp_ack,
            timeout: Duration::from_millis(cli.otlp_ack_timeout_ms),
            mark,
        },
    ));
    let otlp_servers = otlp_ingest::start(&cli, intake, token.as_deref())?;
    {
        let (recv, pool) = (counters.recv.clone(), pool.clone());
        spawn("listener", move || {
            endpoint::listen(listener, tx, recv, pool, recv_cfg)
        })?;
    }

    let ablation: Vec<Query> = cli
        .query
        .iter()
        .copied()
        .filter(|q| q.is_ablation())
        .collect();
    let periodic: Vec<Query> = cli
        .query
        .iter()
        .copied()
        .filter(|q| !q.is_ablation() && *q != Query::ProbeEffect)
        .collect();
    let lookback_us = cli.ablation_lookback * 1_000_000;
    let stop_after_data_us = (!ablation.is_empty() && !cli.query_at_end)
        .then_some(ABLATION_WINDOW_US + lookback_us + ABLATION_MARGIN_US);
    if let Some(cut) = stop_after_data_us {
        println!(
            "ablation: ingesting until {:.0} s of data, then counting KV reads > 80 µs in the 120 s window ending {} s before",
            cut as f64 / 1e6,
            cli.ablation_lookback + 5
        );
    }

    let ingest = {
        let (counters, shutdown) = (counters.clone(), shutdown.clone());
        let cfg = IngestConfig {
            timestamps: cli.timestamps,
            event_offset_us: cli.event_offset_us,
            reorder_window_us: cli.reorder_window_ms.saturating_mul(1000),
            resume_after_us,
            sync_interval: Duration::from_millis(cli.sync_interval_ms),
            persist_interval: Duration::from_millis(cli.persist_interval_ms),
            stop_after_connections: cli.stop_after_connections,
            stop_after_data_us,
        };
        std::thread::Builder::new()
            .name("ingest".into())
            .spawn(move || {
                ingest::run(
                    writer,
                    rx,
                    pool,
                    counters,
                    shutdown,
                    (cfg, otlp_stage, intake_log),
                )
            })
            .context("starting the ingest thread")?
    };
    {
        let (counters, finished) = (counters.clone(), finished.clone());
        let interval = Duration::from_secs_f64(cli.report_interval_s);
        spawn("report", move || report::run(counters, finished, interval))?;
    }
    if !cli.query_at_end && !periodic.is_empty() {
        let p = schedule::Periodic {
            queries: periodic,
            interval: Duration::from_secs_f64(cli.query_interval_s),
            count: cli.query_count,
            machine: cli.machine_output,
            timestamps: cli.timestamps,
        };
        let (reader, counters, finished) = (reader.clone(), counters.clone(), finished.clone());
        spawn("query", move || {
            schedule::periodic(reader, counters, finished, p)
        })?;
    }

    let (mut writer, end) = ingest
        .join()
        .map_err(|_| anyhow::anyhow!("the ingest thread panicked"))?;
    finished.store(true, Ordering::SeqCst);
    let now = Counters::get(&counters.now_us);
    let first = Counters::get(&counters.first_us);
    match end {
        IngestEnd::Shutdown => println!("shutting down (signal)"),
        IngestEnd::ConnectionsEnded => println!("ingest ended: connection limit reached"),
        IngestEnd::CutOff => println!(
            "ingest stopped at {:.3} s of data for the ablation query",
            now.saturating_sub(first) as f64 / 1e6
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
    let received = Counters::get(&c.recv.records_received);
    let dropped = Counters::get(&c.recv.records_dropped);
    println!(
        "Final: records received {received}, dropped {dropped} ({:.3} %), ingested {}, not stored {}, not ingested after ingest stopped {}, batches received {} dropped {}, connections {} (bad {}, refused for their token {}), series {} of at most {} (refused {}), late refused {}, persists failed {}, data time {:.3} s, wall {:.3} s",
        if received > 0 { dropped as f64 * 100.0 / received as f64 } else { 0.0 },
        Counters::get(&c.records_ingested),
        Counters::get(&c.records_refused),
        Counters::get(&c.recv.records_skipped),
        Counters::get(&c.recv.batches_received),
        Counters::get(&c.recv.batches_dropped),
        Counters::get(&c.recv.connections),
        Counters::get(&c.recv.bad_connections),
        Counters::get(&c.recv.auth_refused),
        c.series.used(),
        c.series.max(),
        c.series.refused(),
        Counters::get(&c.records_late),
        Counters::get(&c.persist_failures),
        now.saturating_sub(first) as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    println!(
        "Final OTLP: requests {}, items accepted {}, rejected {} (partial success), requests throttled {} (retry later), bad requests {}, acknowledged {}",
        Counters::get(&c.otlp_requests),
        Counters::get(&c.otlp_accepted),
        Counters::get(&c.otlp_rejected),
        Counters::get(&c.otlp_throttled),
        Counters::get(&c.otlp_bad_requests),
        format!("{:?}", cli.otlp_ack).to_lowercase(),
    );
    if cli.machine_output {
        println!(
            "STATS received={received} dropped={dropped} ingested={} not_stored={} bad_connections={} auth_refused={} series_refused={} late={}",
            Counters::get(&c.records_ingested),
            Counters::get(&c.records_refused),
            Counters::get(&c.recv.bad_connections),
            Counters::get(&c.recv.auth_refused),
            c.series.refused(),
            Counters::get(&c.records_late)
        );
    }
    drop(otlp_servers);
    drop(http_server);
    drop(exporting);
    // Persist first so the counters include the chunks sealed at close.
    if let Err(e) = writer.persist() {
        eprintln!("persist before close: {e}");
    }
    let stats = writer.stats();
    writer.close().context("closing the store")?;
    println!(
        "store: {} records, {} chunks, {} blocks flushed, {} segments dropped by retention",
        stats.records, stats.chunks, stats.blocks_flushed, stats.segments_dropped
    );
    println!(
        "store compression: {} chunks written, {} stored uncompressed ({} of them to keep up with ingest), {} bytes of chunks in {} bytes of frames (ratio {:.2})",
        stats.chunks_written,
        stats.chunks_stored_raw,
        stats.chunks_raw_to_keep_up,
        stats.chunk_bytes_written,
        stats.frame_bytes_written,
        stats.chunk_bytes_written as f64 / stats.frame_bytes_written.max(1) as f64
    );
    if let Some(t) = temp {
        if cli.keep_data {
            let p = t.keep();
            println!("store kept in {}", p.display());
        } else {
            drop(t);
        }
    }
    println!("{}", telemetry::cpu::exit_line(received));
    std::process::exit(0)
}
