//! `tcp-replay`: send a recording to an endpoint at its recorded pace.
//!
//! Prints one line per second: `i Batches Generated: g, Behind: b, Records: r`
//! where `g` and `r` are the batches and records sent during second `i` and
//! `b` is how far behind schedule the last batch was sent, in ms.

use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;
use endpoint::{ClientStream, ClientTls};
use replay::tcp::{connect_with_retry, run, EndReason, ReplayConfig};

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
    /// Speak TLS, trusting the CA certificates in this PEM file (the
    /// endpoint runs with --tls-cert/--tls-key).
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// The name the endpoint's certificate must carry (default: the host
    /// part of --addr).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    tls_server_name: Option<String>,
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
    let tls = match &cli.tls_ca {
        None => None,
        Some(ca) => match ClientTls::from_ca_file(ca) {
            Ok(t) => {
                let name = cli
                    .tls_server_name
                    .clone()
                    .unwrap_or_else(|| host_of(&cli.addr).to_string());
                Some((t, name))
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        },
    };
    let cfg = ReplayConfig {
        file_path: cli.file_path,
        addr: cli.addr,
        duration_s: cli.duration_s,
        speed: cli.speed,
        no_wait: cli.no_wait,
        connect_timeout_s: cli.connect_timeout_s,
    };
    match telemetry::RecordingReader::open(&cfg.file_path) {
        Ok(r) => {
            let h = r.header();
            println!("recording {}: {h}", cfg.file_path.display());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
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
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let stream = match secure(&tls, stream) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "connected to {}{}; replaying {} at speed {}{}",
        cfg.addr,
        if tls.is_some() { " (TLS)" } else { "" },
        cfg.file_path.display(),
        cfg.speed,
        if cfg.no_wait { " (no wait)" } else { "" }
    );
    let result = run(
        &cfg,
        stream,
        |p| {
            println!(
                "{} Batches Generated: {}, Behind: {:.1}, Records: {}",
                p.second, p.batches, p.behind_ms, p.records
            )
        },
        || stop.load(Ordering::Relaxed),
    );
    match result {
        Ok(s) => {
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
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
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
