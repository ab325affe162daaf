//! `ingest-scaling`: write one source's records into one store as fast as
//! possible and print `db=… threads=… size=… records/s=… MB/s=…` on stdout.

use anyhow::Result;
use clap::Parser;
use ingest_scaling::{run, Db, RunConfig};
use std::path::PathBuf;
use std::time::Duration;

/// Ingest-scaling baseline: Loom vs LMDB vs RocksDB vs raw file.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Store under test.
    #[arg(long, value_enum)]
    db: Db,
    /// Payload bytes per record.
    #[arg(long)]
    data_size: usize,
    /// Writer threads (rocksdb and file only).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds to write.
    #[arg(long, default_value_t = 120)]
    duration_s: u64,
    /// Scratch directory, wiped before (and, without --keep-data, after) the run
    /// [default: <repo>/tmp-data/ingest-scaling].
    #[arg(long)]
    storage_dir: Option<PathBuf>,
    /// Loom only: declare a range index on the source (u64 from the first 8 payload bytes).
    #[arg(long)]
    index: bool,
    /// Keep the written data after the run.
    #[arg(long)]
    keep_data: bool,
    /// Stop the run early (and say so on stderr) when less than this many GB
    /// (10^9 B) are free on the storage file system.
    #[arg(long, default_value_t = 8)]
    reserve_gb: u64,
    /// Loom only: zstd level of the chunks written to disk, 0 to store them
    /// uncompressed (format 2's frames either way) [default: the engine's].
    #[arg(long, allow_negative_numbers = true)]
    compression_level: Option<i32>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let cfg = RunConfig {
        db: args.db,
        data_size: args.data_size,
        threads: args.threads,
        duration: Duration::from_secs(args.duration_s),
        storage_dir: args
            .storage_dir
            .unwrap_or_else(ingest_scaling::storage::default_dir),
        index: args.index,
        keep_data: args.keep_data,
        reserve_bytes: args.reserve_gb.saturating_mul(1_000_000_000),
        compression_level: args.compression_level,
    };
    let summary = run(&cfg)?;
    println!("{summary}");
    Ok(())
}
