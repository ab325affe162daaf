//! `replay gen`: write a synthetic recording.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use replay::{generate_file, GenConfig, Phase, Workload};

#[derive(Parser)]
#[command(name = "replay", about = "Make telemetry recordings")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a SYNTHETIC recording shaped like a workload phase (see `replay::generate`).
    Gen {
        /// Workload to imitate.
        #[arg(long, value_enum, default_value = "rocksdb")]
        workload: Workload,
        /// Phase: p1 = KV ops, p2 = + syscalls, p3 = + page cache (rocksdb) or packets (valkey).
        #[arg(long, value_enum)]
        phase: Phase,
        /// Recording length in seconds.
        #[arg(long, default_value_t = 60.0)]
        duration_s: f64,
        /// KV ops per second (other kinds scale with it).
        #[arg(long, default_value_t = 100_000.0)]
        rate: f64,
        /// Approximate records per batch.
        #[arg(long, default_value_t = 256)]
        batch_size: usize,
        /// Random seed (same seed, same file).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output file.
        #[arg(long)]
        output: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Gen {
            workload,
            phase,
            duration_s,
            rate,
            batch_size,
            seed,
            output,
        } => {
            anyhow::ensure!(
                duration_s > 0.0 && duration_s.is_finite(),
                "--duration-s must be positive"
            );
            anyhow::ensure!(rate >= 0.0 && rate.is_finite(), "--rate must be >= 0");
            let cfg = GenConfig {
                workload,
                phase,
                duration_s,
                rate,
                batch_size,
                seed,
            };
            if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            let s = generate_file(&cfg, &output)
                .with_context(|| format!("writing {}", output.display()))?;
            println!(
                "SYNTHETIC recording written to {}: workload {} phase {}, {} s, {} kv ops/s, seed {}",
                output.display(),
                workload.name(),
                phase.name(),
                duration_s,
                rate,
                seed
            );
            println!(
                "{} batches, {} records, {} slow bursts at {:?} (µs)",
                s.batches,
                s.records,
                s.bursts.len(),
                s.bursts
            );
        }
    }
    Ok(())
}
