//! `valkey-workload`: flags → [`valkey_workload::run`] through the shared
//! [`workload::cli::main`] (progress and summary lines on stdout).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use valkey_workload::{KeyDistribution, WorkloadConfig};
use workload::cli::{self, DestinationArgs};

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
    #[command(flatten)]
    destination: DestinationArgs,
    /// Records per batch from each client thread.
    #[arg(long, default_value_t = 256)]
    batch_size: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
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
        batch_size: args.batch_size,
        ..WorkloadConfig::default()
    };
    let phase = config.phase();
    cli::main(
        "valkey",
        phase,
        args.destination.destination(),
        |destination, interrupted, on_event| {
            let config = WorkloadConfig {
                destination,
                ..config
            };
            let s = valkey_workload::run(config, interrupted, |p| println!("{p}"), on_event)?.run;
            let probe_rates = format!(
                "Probe events/s: syscall {:.1}, packet {:.1}; kernel drops: syscall {}, packet {}",
                s.probes.syscall_events as f64 / s.seconds.max(1e-9),
                s.probes.packet_events as f64 / s.seconds.max(1e-9),
                s.probes.syscall_kernel_drops,
                s.probes.packet_kernel_drops
            );
            Ok::<_, valkey_workload::WorkloadError>(cli::Finished {
                summary: s,
                packets: true,
                extra_lines: vec![probe_rates],
            })
        },
    )
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
