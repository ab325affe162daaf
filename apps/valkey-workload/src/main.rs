//! `valkey-workload`: flags → [`valkey_workload::run`], progress on stdout.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use valkey_workload::{Destination, KeyDistribution, WorkloadConfig};
use workload_pipeline::Alternative;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Distribution {
    /// Zipfian key popularity with --zipf-constant (YCSB's default).
    Zipfian,
    /// Every key equally likely.
    Uniform,
}

/// A live Valkey (or Redis) server on 127.0.0.1 under a YCSB-A-like load,
/// sending request (and optionally the server's syscall and packet)
/// telemetry to a destination.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Keys loaded before the run; requests pick among them.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Concurrent client connections (one thread each).
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Fraction of requests that are reads (GET); the rest are updates (SET).
    #[arg(long, default_value_t = 0.5)]
    read_ratio: f64,
    /// Key popularity.
    #[arg(long, value_enum, default_value_t = Distribution::Zipfian)]
    distribution: Distribution,
    /// Exponent of the zipfian distribution.
    #[arg(long, default_value_t = 0.99)]
    zipf_constant: f64,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Measured run time after the warmup, s.
    #[arg(long, default_value_t = 60)]
    duration_seconds: u64,
    /// Warmup before telemetry and measurement start, s.
    #[arg(long, default_value_t = 5)]
    warmup_seconds: u64,
    /// Each client stops after this many requests (the run ends when all did).
    #[arg(long)]
    max_requests_per_client: Option<u64>,
    /// Server binary (default: valkey-server, else redis-server, from PATH).
    #[arg(long)]
    server_binary: Option<PathBuf>,
    /// Server port on 127.0.0.1 (default: a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Attach the syscall-latency probe to the server process (phase P2).
    #[arg(long)]
    syscalls: bool,
    /// Capture the server port's packets on loopback (phase P3 with --syscalls).
    #[arg(long)]
    packets: bool,
    /// Destination other than a recording file.
    #[arg(long, value_enum)]
    alternative_recording: Option<Alternative>,
    /// Address for --alternative-recording tcp.
    #[arg(long, default_value = "127.0.0.1:7000")]
    addr: String,
    /// File to write: a recording (telemetry recording format) unless
    /// --alternative-recording says otherwise.
    #[arg(long)]
    output_path: Option<PathBuf>,
    /// Records per batch from each client thread.
    #[arg(long, default_value_t = 256)]
    batch_size: usize,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    let destination = match Destination::from_flags(
        args.alternative_recording,
        &args.addr,
        args.output_path.as_ref(),
    ) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("valkey-workload: {e}");
            return ExitCode::from(2);
        }
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
            eprintln!("valkey-workload: cannot install the Ctrl-C handler: {e}");
            return ExitCode::FAILURE;
        }
    }
    let config = WorkloadConfig {
        records: args.records,
        clients: args.clients,
        read_ratio: args.read_ratio,
        distribution: match args.distribution {
            Distribution::Zipfian => KeyDistribution::Zipfian {
                constant: args.zipf_constant,
            },
            Distribution::Uniform => KeyDistribution::Uniform,
        },
        value_size: args.value_size,
        duration: Duration::from_secs(args.duration_seconds),
        warmup: Duration::from_secs(args.warmup_seconds),
        max_requests_per_client: args.max_requests_per_client,
        server_binary: args.server_binary.clone(),
        port: args.port,
        syscalls: args.syscalls,
        packets: args.packets,
        destination,
        batch_size: args.batch_size,
        ..WorkloadConfig::default()
    };
    println!(
        "Phase: {} destination: {:?}",
        config.phase(),
        config.destination
    );
    let result = valkey_workload::run(
        config,
        &interrupted,
        |p| println!("{p}"),
        |e| println!("[valkey-workload] {e}"),
    );
    match result {
        Ok(s) => {
            if interrupted.load(Ordering::Relaxed) {
                println!("[valkey-workload] interrupted: the run ended early");
            }
            println!(
                "Total sent: {} records (App: {}, Syscall: {}, Packets: {}), Dropped: {} (app channel: {}, probe channel: {}, kernel: {})",
                s.sent(),
                s.kv_sent,
                s.syscall_sent,
                s.packet_sent,
                s.dropped(),
                s.app_dropped,
                s.probes.channel_drops,
                s.probes.kernel_drops()
            );
            println!(
                "Probe events/s: syscall {:.1}, packet {:.1}; kernel drops: syscall {}, packet {}",
                s.probes.syscall_events as f64 / s.seconds.max(1e-9),
                s.probes.packet_events as f64 / s.seconds.max(1e-9),
                s.probes.syscall_kernel_drops,
                s.probes.packet_kernel_drops
            );
            println!("Average valkey rate per sec: {:.1}", s.ops_per_sec());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("valkey-workload: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_distribution_names_the_allowed_values() {
        let err = Args::try_parse_from(["valkey-workload", "--distribution", "latest"])
            .expect_err("latest is not a distribution");
        let text = err.to_string();
        assert!(text.contains("--distribution"), "{text}");
        assert!(
            text.contains("zipfian") && text.contains("uniform"),
            "{text}"
        );
    }
}
