//! `rocksdb-workload`: flags → [`rocksdb_workload::run`] through the shared
//! [`workload::cli::main`] (progress and summary lines on stdout).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rocksdb_workload::WorkloadConfig;
use workload::cli::{self, DestinationArgs};

/// Embedded RocksDB under a read-mostly load, sending KV op (and optionally
/// syscall and page-cache) telemetry to a destination.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// RocksDB databases in this process.
    #[arg(long, default_value_t = 3)]
    instances: usize,
    /// Worker threads per database.
    #[arg(long, default_value_t = 16)]
    threads_per_instance: usize,
    /// Fraction of operations that are reads of the hot key range.
    #[arg(long, default_value_t = 0.9)]
    read_ratio: f64,
    /// Size of the hot key range that reads pick from.
    #[arg(long, default_value_t = 100_000)]
    hot_keys: u64,
    /// Size of the key range that writes pick from.
    #[arg(long, default_value_t = 100_000_000)]
    key_space: u64,
    /// Bytes per written value.
    #[arg(long, default_value_t = 128)]
    value_size: usize,
    /// Measured run time after the warmup, s.
    #[arg(long, default_value_t = 60)]
    duration_seconds: u64,
    /// Warmup before telemetry and measurement start, s.
    #[arg(long, default_value_t = 15)]
    warmup_seconds: u64,
    /// Directory for the databases (instance-N sub-directories are recreated).
    #[arg(long, default_value = "/tmp/loom-rocksdb-workload")]
    rocksdb_path: PathBuf,
    /// Drop the page cache every this many seconds.
    #[arg(long, default_value_t = 10)]
    drop_caches_interval_s: u64,
    /// Never drop the page cache.
    #[arg(long)]
    no_drop_caches: bool,
    /// Attach the syscall-latency probe to this process (phase P2).
    #[arg(long)]
    syscalls: bool,
    /// Attach the page-cache probe to this process (phase P3 with --syscalls).
    #[arg(long)]
    page_cache: bool,
    #[command(flatten)]
    destination: DestinationArgs,
    /// Records per batch from each worker thread.
    #[arg(long, default_value_t = 256)]
    batch_size: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = WorkloadConfig {
        instances: args.instances,
        threads_per_instance: args.threads_per_instance,
        read_ratio: args.read_ratio,
        hot_keys: args.hot_keys,
        key_space: args.key_space,
        value_size: args.value_size,
        duration: Duration::from_secs(args.duration_seconds),
        warmup: Duration::from_secs(args.warmup_seconds),
        rocksdb_path: args.rocksdb_path.clone(),
        drop_caches_interval: (!args.no_drop_caches && args.drop_caches_interval_s > 0)
            .then(|| Duration::from_secs(args.drop_caches_interval_s)),
        syscalls: args.syscalls,
        page_cache: args.page_cache,
        batch_size: args.batch_size,
        ..WorkloadConfig::default()
    };
    let phase = config.phase();
    cli::main(
        "rocksdb",
        phase,
        args.destination.destination(),
        |destination, interrupted, on_event| {
            let config = WorkloadConfig {
                destination,
                ..config
            };
            let summary =
                rocksdb_workload::run(config, interrupted, |p| println!("{p}"), on_event)?;
            Ok::<_, rocksdb_workload::WorkloadError>(cli::Finished {
                summary,
                packets: false,
                extra_lines: Vec::new(),
            })
        },
    )
}
