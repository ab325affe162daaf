//! `tcp-replay`: send a recording to an endpoint at its recorded pace.
//!
//! Prints one line per second: `i Batches Generated: g, Behind: b, Records: r`
//! where `g` and `r` are the batches and records sent during second `i` and
//! `b` is how far behind schedule the last batch was sent, in ms.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;
use endpoint::{ClientStream, ClientTls};
use replay::AckedConfig;
use replay::{connect_with_retry, run_paced as run, EndReason, ReplayConfig};
use telemetry::wire::resend::{Connector, Link};

#[derive(Parser)]
#[command(
    name = "tcp-replay",
    about = "Replay a telemetry recording over TCP",
    long_about = "Replay a telemetry recording over TCP, paced by its recorded arrival times.\n\n\
        Prints one line per second: `i Batches Generated: g, Behind: b, Records: r`, where g and r \
        are the batches and records sent during second i and b is how far behind schedule the \
        last batch was sent, in ms (0 with --no-wait). Waits for the endpoint to accept; ends \
        with a summary when the recording (looped until --duration-s) is sent or the endpoint \
        closes the connection."
)]
struct Cli {
    /// Recording file.
    #[arg(long)]
    file_path: PathBuf,
    /// Endpoint address.
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: String,
    /// Loop the recording until this many seconds have passed (default: send once).
    #[arg(long)]
    duration_s: Option<f64>,
    /// Pace multiplier: 10 sends ten times faster than recorded.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Ignore recorded arrival times; send as fast as possible.
    #[arg(long)]
    no_wait: bool,
    /// Give up if the endpoint does not accept within this many seconds.
    #[arg(long, default_value_t = 300.0)]
    connect_timeout_s: f64,
    /// Send the recording exactly this many times (each loop shifted past
    /// the previous one, as --duration-s loops), e.g. to build a given span
    /// of data the same way for two endpoints; with --duration-s, whichever
    /// ends first.
    #[arg(long, conflicts_with = "acked")]
    loops: Option<u64>,
    /// Speak TLS, trusting the CA certificates in this PEM file (the
    /// endpoint runs with --tls-cert/--tls-key).
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// The name the endpoint's certificate must carry (default: the host
    /// part of --addr).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    tls_server_name: Option<String>,
    /// Send with acknowledgements (wire protocol 2): keep every frame until
    /// the endpoint says it is durable, reconnect with backoff when the
    /// connection breaks (the endpoint restarted) and send again what is
    /// not acknowledged. Record times are shifted onto the wall clock by
    /// one offset (printed as `acked: event times + OFFSET µs`) and stored
    /// as they are.
    #[arg(long)]
    acked: bool,
    /// With --acked: the sender's stable id (default: random per run).
    #[arg(long, requires = "acked")]
    sender_id: Option<u64>,
    /// With --acked: the endpoint's token, read from this file.
    #[arg(long, value_name = "FILE", requires = "acked")]
    token_file: Option<PathBuf>,
    /// With --acked: MiB of unacknowledged frames kept; the replay waits
    /// for acknowledgements when they fill it.
    #[arg(long, default_value_t = 512, requires = "acked")]
    max_unacked_mb: u64,
    /// With --acked: after the last frame, wait at most this long for every
    /// acknowledgement (reconnecting as needed).
    #[arg(long, default_value_t = 120.0, requires = "acked")]
    drain_timeout_s: f64,
}

/// A sender id that differs between runs.
fn random_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    replay::SplitMix64::new(t ^ u64::from(std::process::id()) << 32).next_u64()
}

/// `--acked`: replays through the resending sender; the exit code.
fn run_acked(
    cfg: &ReplayConfig,
    acked: &AckedConfig,
    tls: Option<(ClientTls, String)>,
    stop: &Arc<AtomicBool>,
) -> i32 {
    let addr = cfg.addr.clone();
    let connect: Connector = Box::new(move || {
        let io = |context| move |source| telemetry::WireError::Io { context, source };
        let sa = addr
            .to_socket_addrs()
            .map_err(io("resolving the address"))?
            .next()
            .ok_or_else(|| io("resolving the address")(std::io::ErrorKind::NotFound.into()))?;
        let tcp = TcpStream::connect_timeout(&sa, std::time::Duration::from_secs(2))
            .map_err(io("connecting"))?;
        let s = secure(&tls, tcp).map_err(telemetry::WireError::BadControl)?;
        Ok(Box::new(s) as Box<dyn Link>)
    });
    println!(
        "acked replay of {} to {} as sender {:#x}",
        cfg.file_path.display(),
        cfg.addr,
        acked.sender_id
    );
    let r = replay::run_acked(
        cfg,
        acked,
        connect,
        |o| println!("acked: event times + {o} µs"),
        |p| {
            println!(
                "{} Batches Generated: {}, Behind: {:.1}, Records: {}",
                p.second, p.batches, p.behind_ms, p.records
            )
        },
        || stop.load(Ordering::Relaxed),
    );
    match r {
        Ok(s) => {
            println!(
                "Acked replay done ({}): {} frames, {} records in {:.2} s ({:.0} records/s), acknowledged {} records, {} frames unacknowledged, {} frames resent, {} connections, ack latency p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
                if s.stopped { "stopped by signal" } else { "recording sent" },
                s.frames,
                s.records,
                s.elapsed_s,
                s.records as f64 / s.elapsed_s.max(1e-9),
                s.acked,
                s.unacked_frames,
                s.resent_frames,
                s.connections,
                s.ack_latency_ms.0,
                s.ack_latency_ms.1,
                s.ack_latency_ms.2
            );
            if s.unacked_frames > 0 {
                1
            } else {
                0
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// The host part of `HOST:PORT` or `[V6]:PORT`.
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Wraps the connection in TLS when --tls-ca asks for it.
fn secure(tls: &Option<(ClientTls, String)>, tcp: TcpStream) -> Result<ClientStream, String> {
    let Some((tls, name)) = tls else {
        return Ok(ClientStream::Plain(tcp));
    };
    let s = tls.connect(tcp, name).map_err(|e| e.to_string())?;
    Ok(s.into())
}

fn main() {
    let cli = Cli::parse();
    if !(cli.speed > 0.0 && cli.speed.is_finite()) {
        eprintln!(
            "error: --speed must be a positive number, got {}",
            cli.speed
        );
        std::process::exit(2);
    }
    // The CA file is read before connecting, so a bad one fails at once.
    let tls = client_tls(&cli);
    let cfg = ReplayConfig {
        file_path: cli.file_path.clone(),
        addr: cli.addr.clone(),
        duration_s: cli.duration_s,
        speed: cli.speed,
        no_wait: cli.no_wait,
        connect_timeout_s: cli.connect_timeout_s,
        loops: cli.loops,
    };
    match telemetry::RecordingReader::open(&cfg.file_path) {
        Ok(r) => {
            let h = r.header();
            println!("recording {}: {h}", cfg.file_path.display());
        }
        Err(e) => fail(e),
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    if cli.acked {
        std::process::exit(run_acked(&cfg, &acked_config(&cli), tls, &stop));
    }
    run_paced(&cfg, &tls, &stop);
}

/// Prints the error and exits with status 1.
fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(1);
}

/// The TLS client of --tls-ca, with the server name to check.
fn client_tls(cli: &Cli) -> Option<(ClientTls, String)> {
    let ca = cli.tls_ca.as_ref()?;
    match ClientTls::from_ca_file(ca) {
        Ok(t) => {
            let name = cli
                .tls_server_name
                .clone()
                .unwrap_or_else(|| host_of(&cli.addr).to_string());
            Some((t, name))
        }
        Err(e) => fail(e),
    }
}

/// The --acked settings from the flags (the token read from --token-file).
fn acked_config(cli: &Cli) -> AckedConfig {
    AckedConfig {
        sender_id: cli.sender_id.unwrap_or_else(random_id),
        token: match &cli.token_file {
            None => String::new(),
            Some(f) => match std::fs::read_to_string(f) {
                Ok(t) => t.trim().to_string(),
                Err(e) => fail(format!("reading --token-file {}: {e}", f.display())),
            },
        },
        max_unacked_bytes: cli.max_unacked_mb << 20,
        drain_timeout: std::time::Duration::from_secs_f64(cli.drain_timeout_s.max(0.0)),
    }
}

/// The plain paced replay: waits for the endpoint, sends, prints the
/// per-second lines and the `Replay done` line.
fn run_paced(cfg: &ReplayConfig, tls: &Option<(ClientTls, String)>, stop: &AtomicBool) {
    let mut last_warning: Option<std::time::Instant> = None;
    let stream = match connect_with_retry(&cfg.addr, cfg.connect_timeout_s, |e| {
        if last_warning.is_none_or(|t| t.elapsed().as_secs() >= 5) {
            println!(
                "waiting for endpoint {} to accept: {e} (retrying)",
                cfg.addr
            );
            last_warning = Some(std::time::Instant::now());
        }
    }) {
        Ok(s) => s,
        Err(e) => fail(e),
    };
    let stream = secure(tls, stream).unwrap_or_else(|e| fail(e));
    println!(
        "connected to {}{}; replaying {} at speed {}{}",
        cfg.addr,
        if tls.is_some() { " (TLS)" } else { "" },
        cfg.file_path.display(),
        cfg.speed,
        if cfg.no_wait { " (no wait)" } else { "" }
    );
    let result = run(
        cfg,
        stream,
        |p| {
            println!(
                "{} Batches Generated: {}, Behind: {:.1}, Records: {}",
                p.second, p.batches, p.behind_ms, p.records
            )
        },
        || stop.load(Ordering::Relaxed),
    );
    let s = result.unwrap_or_else(|e| fail(e));
    let why = match s.reason {
        EndReason::Finished => "recording sent",
        EndReason::EndpointClosed => "endpoint closed the connection",
        EndReason::Stopped => "stopped by signal",
    };
    println!(
        "Replay done ({why}): {} batches, {} records in {:.2} s ({:.0} records/s), {} loops, max behind {:.1} ms, {} bytes sent ({:.1} MB/s)",
        s.batches,
        s.records,
        s.elapsed_s,
        s.records as f64 / s.elapsed_s.max(1e-9),
        s.loops,
        s.max_behind_ms,
        s.bytes,
        s.bytes as f64 / 1e6 / s.elapsed_s.max(1e-9)
    );
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn the_server_name_defaults_to_the_host_of_the_address() {
        assert_eq!(host_of("loom.example:7878"), "loom.example");
        assert_eq!(host_of("127.0.0.1:7878"), "127.0.0.1");
        assert_eq!(host_of("[::1]:7878"), "::1");
    }
}
