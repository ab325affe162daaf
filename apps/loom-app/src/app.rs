//! Starting loom-app: open the store, bind every listener, start the
//! threads (listener, ingest, report, periodic questions) and the HTTP and
//! OTLP servers, then write the ready file. What a [`Running`] app does
//! until it ends is in `running.rs`.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use endpoint::app::{spawn, spawn_periodic, spawn_reporter, Periodic, Stop};

use crate::cli::Cli;
use crate::counters::{Counters, Gates};
use crate::ingest::{self, epoch_us, IngestConfig, TimestampMode};
use crate::intake_log::IntakeLog;
use crate::otlp_ingest;
use crate::queries::Query;
use crate::running::{Parts, Running, Threads};
use crate::schedule::{print_answer, ABLATION_MARGIN_US, ABLATION_WINDOW_US};
use crate::{exporting, http, receive, report, store, write};

/// Idle payload buffers kept for the receivers.
const RECYCLED_BUFFERS: usize = 64;

/// loom-app as a library: [`App::start`] a [`crate::Config`], get a
/// [`Running`] app with its bound addresses.
pub struct App;

impl App {
    /// Starts loom-app as `config` says, with a stop flag of its own (see
    /// [`Running::stop`]). Prints what the binary prints (the listening
    /// lines, progress lines, answers).
    pub fn start(config: Cli) -> anyhow::Result<Running> {
        App::start_with(config, Stop::new())
    }

    /// [`App::start`] with a stop flag made before (the binary sets it on
    /// Ctrl-C from before it listens).
    pub fn start_with(cli: Cli, stop: Stop) -> anyhow::Result<Running> {
        cli.validate()?;
        let store::Store {
            writer,
            reader,
            dir,
            temp,
        } = store::open(&cli)?;
        let token = http::auth_token(&cli)?;
        let (listener, tcp, tls) = bind_stream(&cli, &dir, token.is_some())?;
        // The target is checked before anything listens: a bad URL, missing
        // credentials or a missing bucket stop the app with the cause.
        let export = exporting::start(&cli, reader.clone())?;
        let start = Instant::now();
        let counters = Arc::new(Counters {
            series: Arc::new(endpoint::SeriesLimit::new(cli.max_series)),
            gates: Gates::new(cli.max_connections),
            ..Counters::default()
        });
        let (tx, rx) = crossbeam_channel::bounded::<receive::Msg>(cli.queue_capacity);
        // Durable marks of acknowledged TCP senders (wire protocol version 2).
        let acked_senders = Arc::new(
            endpoint::AckBook::open(&dir.join("acked-senders"))
                .context("opening the acknowledged senders' marks")?,
        );
        let recv_cfg = receive_config(&cli, token.clone(), tls, &acked_senders, &counters);
        // Enough idle buffers for every receiver's next group while ingest keeps up.
        let pool = endpoint::BufferPool::new(RECYCLED_BUFFERS, recv_cfg.group_bytes + (64 << 10));
        let registry = otlp_registry(&reader, &counters.series);
        let admission = Arc::new(otlp_ingest::Admission::default());
        let otlp_stage = otlp_ingest::OtlpStage::new(
            registry.clone(),
            cli.otlp_reorder_window_ms.saturating_mul(1000),
            admission.clone(),
        );
        let otlp = OtlpParts {
            registry,
            admission,
            max_record_bytes: writer.max_record_size(),
            tx: tx.clone(),
            counters: counters.clone(),
            token,
            idle_timeout: Duration::from_millis(cli.idle_timeout_ms),
        };
        let (intake_log, intake, otlp_servers) = start_otlp(&cli, &dir, otlp)?;
        let http_server = start_http(&cli, &reader, intake, writer.max_record_size(), &counters)?;
        let listener_stop = start_listener(listener, tx, &counters, pool.clone(), recv_cfg)?;

        let plan = Plan::of(&cli);
        let ingest = {
            let (counters, shutdown) = (counters.clone(), stop.flag());
            let cfg = IngestConfig {
                acks: Some(acked_senders),
                ..ingest_config(&cli, resume_after_us(&reader), plan.stop_after_data_us)
            };
            spawn("ingest", move || {
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
        let finished = Arc::new(AtomicBool::new(false));
        let threads = Threads {
            ingest,
            report: start_reporter(&cli, &counters, &reader, &finished)?,
            query: start_questions(&cli, plan.periodic, &reader, &counters, &finished)?,
            listener_stop,
        };
        let running = Running::new(
            tcp,
            Parts {
                stop,
                export,
                http: http_server,
                otlp: otlp_servers,
                threads,
                reader,
                counters,
                finished,
                start,
                dir,
                temp,
                ablation: plan.ablation,
                cli,
            },
        );
        running.write_ready_file()?;
        Ok(running)
    }
}

/// A restarted endpoint continues after the newest stored record.
fn resume_after_us(reader: &loom::Reader) -> u64 {
    reader
        .sources()
        .into_iter()
        .filter_map(|id| reader.latest_timestamp(id))
        .max()
        .unwrap_or(0)
}

/// The telemetry stream receivers' settings from the flags.
fn receive_config(
    cli: &Cli,
    token: Option<String>,
    tls: Option<endpoint::ServerTls>,
    acked_senders: &Arc<endpoint::AckBook>,
    counters: &Counters,
) -> endpoint::ReceiveConfig {
    endpoint::ReceiveConfig {
        max_queued_bytes: cli.queue_max_bytes,
        auth_token: token,
        receiver_name: format!("loom-app {}", env!("CARGO_PKG_VERSION")),
        tls,
        acks: Some(acked_senders.clone()),
        gate: Some(counters.gates.ingest.clone()),
        idle_timeout: Some(Duration::from_millis(cli.idle_timeout_ms)),
        ..endpoint::ReceiveConfig::new(cli.max_payload_bytes)
    }
}

/// The OTLP series registry, holding the series already stored (they count
/// against the one series limit).
fn otlp_registry(
    reader: &loom::Reader,
    series: &Arc<endpoint::SeriesLimit>,
) -> Arc<otlp::Registry> {
    let snap = reader.snapshot();
    // A series' late siblings (its records stored late, at their own
    // times) are the same series: counted once, and not OTLP series of
    // their own (an id the registry cannot derive would reserve the
    // measurement).
    let siblings = loom::late_siblings(snap.schemas());
    let schemas: Vec<_> = snap
        .schemas()
        .into_iter()
        .filter(|(id, _)| !siblings.contains_key(id))
        .collect();
    series.count_existing(schemas.len() as u64);
    Arc::new(otlp::Registry::with_limit(
        series.clone(),
        schemas.into_iter().map(|(id, s)| (id.0, s)),
    ))
}

/// The InfluxDB API (`--http`); its `/write` bodies go through the OTLP
/// intake: one series registry and limit, one intake log, one reorder window.
fn start_http(
    cli: &Cli,
    reader: &loom::Reader,
    intake: Arc<otlp_ingest::Intake>,
    max_record_bytes: usize,
    counters: &Counters,
) -> anyhow::Result<Option<influxql::http::ServerHandle>> {
    // `/write` bodies go through the OTLP intake: one series registry
    // and limit, one intake log, one reorder window.
    let writes = Arc::new(write::LineSink::new(
        intake,
        cli.http_max_write_bytes,
        max_record_bytes,
        counters.write.clone(),
    ));
    http::start(
        cli,
        reader.clone(),
        Some(writes),
        counters.gates.http.clone(),
    )
}

/// The telemetry stream's listener thread; returns its stop flag.
fn start_listener(
    listener: TcpListener,
    tx: crossbeam_channel::Sender<receive::Msg>,
    counters: &Counters,
    pool: endpoint::BufferPool,
    recv_cfg: endpoint::ReceiveConfig,
) -> anyhow::Result<Arc<AtomicBool>> {
    let listener_stop = Arc::new(AtomicBool::new(false));
    let (recv, stop_flag) = (counters.recv.clone(), listener_stop.clone());
    spawn("listener", move || {
        endpoint::listen_until(listener, tx, recv, pool, recv_cfg, &stop_flag)
    })
    .context("starting the listener thread")?;
    Ok(listener_stop)
}

/// Which questions run when, from the flags.
struct Plan {
    /// Ablation questions, asked after the cut-off.
    ablation: Vec<Query>,
    /// Questions asked every `--query-interval-s`.
    periodic: Vec<Query>,
    /// Ablation: the data time after which ingest stops.
    stop_after_data_us: Option<u64>,
}

impl Plan {
    fn of(cli: &Cli) -> Plan {
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
        Plan {
            ablation,
            periodic,
            stop_after_data_us,
        }
    }
}

/// Binds the telemetry stream (`--addr`; TLS with `--tls-cert`) and prints
/// the listening line: the listener, its bound address, its TLS setup.
fn bind_stream(
    cli: &Cli,
    dir: &std::path::Path,
    has_token: bool,
) -> anyhow::Result<(TcpListener, SocketAddr, Option<endpoint::ServerTls>)> {
    stream_addr_allowed(&cli.addr, has_token)?;
    let tls = match (&cli.tls_cert, &cli.tls_key) {
        (Some(cert), Some(key)) => Some(endpoint::ServerTls::from_pem_files(cert, key)?),
        _ => None,
    };
    let listener =
        TcpListener::bind(&cli.addr).with_context(|| format!("listening on {}", cli.addr))?;
    let tcp = listener
        .local_addr()
        .with_context(|| format!("listening on {}", cli.addr))?;
    println!(
        "loom-app listening on {tcp}, store {}, queries {:?}, timestamps {:?}",
        dir.display(),
        cli.query.iter().map(|q| q.name()).collect::<Vec<_>>(),
        cli.timestamps
    );
    if let Some(cert) = &cli.tls_cert {
        println!("TCP ingest is TLS only (certificate {})", cert.display());
    }
    Ok((listener, tcp, tls))
}

/// The ingest thread's settings from the flags.
fn ingest_config(cli: &Cli, resume_after_us: u64, stop_after_data_us: Option<u64>) -> IngestConfig {
    IngestConfig {
        timestamps: cli.timestamps,
        event_offset_us: cli.event_offset_us,
        reorder_window_us: cli.reorder_window_ms.saturating_mul(1000),
        resume_after_us,
        sync_interval: Duration::from_millis(cli.sync_interval_ms),
        persist_interval: Duration::from_millis(cli.persist_interval_ms),
        stop_after_connections: cli.stop_after_connections,
        stop_after_data_us,
        acks: None,
        ack_interval: Duration::from_millis(cli.ack_interval_ms),
        queue_max_bytes: cli.queue_max_bytes,
    }
}

/// Refuses a telemetry-stream address that other hosts can reach unless a
/// token guards it.
fn stream_addr_allowed(addr: &str, token: bool) -> anyhow::Result<()> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .with_context(|| format!("--addr {addr}"))?
        .collect();
    anyhow::ensure!(
        token || addrs.iter().all(|a| a.ip().is_loopback()),
        "--addr {addr}: a non-loopback address needs --auth-token-file (senders present the token in their HELLO)"
    );
    Ok(())
}

/// The progress line every `--report-interval-s` (`report::line`).
fn start_reporter(
    cli: &Cli,
    counters: &Arc<Counters>,
    reader: &loom::Reader,
    finished: &Arc<AtomicBool>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let mut progress = report::Progress::new(counters.clone());
    let reader = reader.clone();
    let interval = Duration::from_secs_f64(cli.report_interval_s);
    spawn_reporter(finished.clone(), interval, move |_| {
        progress.print();
        report::print_memory(&reader);
    })
    .context("starting the report thread")
}

/// The periodic questions over [now − 80 s, now − 20 s], where now is the
/// wall clock (arrival times) or the newest stored record (event times);
/// none with `--query-at-end` or when no question is periodic.
fn start_questions(
    cli: &Cli,
    periodic: Vec<Query>,
    reader: &loom::Reader,
    counters: &Arc<Counters>,
    finished: &Arc<AtomicBool>,
) -> anyhow::Result<Option<std::thread::JoinHandle<()>>> {
    if cli.query_at_end || periodic.is_empty() {
        return Ok(None);
    }
    let p = Periodic {
        interval: Duration::from_secs_f64(cli.query_interval_s),
        count: cli.query_count,
    };
    let (reader, counters) = (reader.clone(), counters.clone());
    let (timestamps, machine) = (cli.timestamps, cli.machine_output);
    let now = move || match timestamps {
        TimestampMode::Arrival => epoch_us(),
        TimestampMode::Event => Counters::get(&counters.now_us),
    };
    let ask = move |t0, t1| {
        for &q in &periodic {
            print_answer(&reader, q, t0, t1, machine);
        }
    };
    spawn_periodic(finished.clone(), p, now, ask)
        .map(Some)
        .context("starting the query thread")
}

/// The intake log and the records an earlier run left in it.
type IntakeLogOpened = (IntakeLog, crate::intake_log::Leftover);

/// What the OTLP receivers share with the rest of the app.
struct OtlpParts {
    /// Series admitted so far (shared with the stream through the series limit).
    registry: Arc<otlp::Registry>,
    /// What the ingest thread publishes for handlers' own admission.
    admission: Arc<otlp_ingest::Admission>,
    /// The engine's largest record.
    max_record_bytes: usize,
    /// The ingest queue.
    tx: crossbeam_channel::Sender<receive::Msg>,
    counters: Arc<Counters>,
    token: Option<String>,
    /// `--idle-timeout-ms` of the OTLP listeners.
    idle_timeout: Duration,
}

/// Opens the OTLP intake log (`--otlp-ack durable`; before the servers, so
/// what an earlier run acknowledged and did not store yet is stored first)
/// and starts the OTLP servers the flags ask for.
fn start_otlp(
    cli: &Cli,
    dir: &std::path::Path,
    p: OtlpParts,
) -> anyhow::Result<(
    Option<IntakeLogOpened>,
    Arc<otlp_ingest::Intake>,
    Option<otlp_ingest::Servers>,
)> {
    let mark = Arc::new(endpoint::DurableMark::new());
    // The intake log is opened before the servers: what an earlier run
    // acknowledged and did not store yet is stored first.
    let opened = match cli.otlp_ack {
        otlp_ingest::AckMode::Durable => Some(
            IntakeLog::open(&dir.join("otlp-intake"), mark.clone())
                .context("opening the OTLP intake log")?,
        ),
        otlp_ingest::AckMode::Queued => None,
    };
    let raw_log = opened.as_ref().map(|(log, _)| log.raw());
    let intake = Arc::new(otlp_ingest::Intake::new(
        p.registry,
        otlp::Config {
            max_record_bytes: p.max_record_bytes,
            ..otlp::Config::default()
        },
        p.tx,
        p.counters.clone(),
        p.token.clone(),
        (
            cli.otlp_max_body_bytes,
            Duration::from_millis(cli.otlp_read_timeout_ms),
        ),
        otlp_ingest::Acks {
            mode: cli.otlp_ack,
            timeout: Duration::from_millis(cli.otlp_ack_timeout_ms),
            mark,
            log: raw_log,
            admission: p.admission,
        },
    ));
    // Raw requests an earlier run logged are converted before the servers
    // take new ones (the ingest thread stores them first).
    let intake_log = opened.map(|(log, left)| (log, otlp_ingest::replayable(&intake, left)));
    let otlp_listen = otlp_ingest::Listen {
        grpc: cli.otlp_grpc.as_deref(),
        http: cli.otlp_http.as_deref(),
        threads: cli.otlp_threads,
        grpc_gate: p.counters.gates.otlp_grpc.clone(),
        http_gate: p.counters.gates.otlp_http.clone(),
        idle_timeout: p.idle_timeout,
    };
    let otlp_servers = otlp_ingest::start(&otlp_listen, intake.clone(), p.token.as_deref())?;
    Ok((intake_log, intake, otlp_servers))
}
