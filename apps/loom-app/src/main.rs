//! `loom-app`: the Loom telemetry endpoint (see the library, `lib.rs`, for
//! what it does and prints). The binary parses the flags, makes Ctrl-C
//! stop it, runs it until ingest ends and prints the CPU line.

use anyhow::Context;
use clap::Parser;

use endpoint::Stop;
use loom_app::{App, Config};

/// loom-app runs for months: an allocator that returns what it frees keeps
/// its resident memory to what it uses (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let config = Config::parse();
    // Before the listening line: a supervisor (or a test) that stops
    // loom-app as soon as it listens gets the clean SIGINT stop.
    let stop = Stop::new();
    stop.on_ctrl_c().context("installing the Ctrl-C handler")?;
    let summary = App::start_with(config, stop)?.wait()?;
    println!("{}", telemetry::cpu_exit_line(summary.received));
    // Receiving threads of connections still open are not waited for.
    std::process::exit(0)
}
