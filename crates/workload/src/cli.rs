//! What the workload binaries share: the destination flags, logging, the
//! Ctrl-C flag, and the run's summary lines. A binary parses its own flags
//! into its config and calls [`main`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{Alternative, Destination, Summary};

/// `--alternative-recording`, `--addr`, `--output-path` (flattened into each
/// binary's flags).
#[derive(Debug, Clone, clap::Args)]
pub struct DestinationArgs {
    /// Destination other than a recording file.
    #[arg(long, value_enum)]
    pub alternative_recording: Option<Alternative>,
    /// Address for --alternative-recording tcp.
    #[arg(long, default_value = "127.0.0.1:7000")]
    pub addr: String,
    /// File to write: a recording (telemetry recording format) unless
    /// --alternative-recording says otherwise.
    #[arg(long)]
    pub output_path: Option<PathBuf>,
}

impl DestinationArgs {
    /// The destination these flags name; the error says which flag is missing.
    pub fn destination(&self) -> Result<Destination, String> {
        Destination::from_flags(
            self.alternative_recording,
            &self.addr,
            self.output_path.as_ref(),
        )
    }
}

/// What a binary's run reports at the end.
pub struct Finished {
    /// The run's totals.
    pub summary: Summary,
    /// Whether the `Total sent` line names packets rather than the page cache.
    pub packets: bool,
    /// Lines printed after the `Total sent` line and before the average.
    pub extra_lines: Vec<String>,
}

/// A workload binary's `main` after flag parsing: logging, the destination
/// (a bad one exits 2), a Ctrl-C flag that ends the run cleanly, the
/// `Phase:` line, progress and milestone lines, then the summary lines
/// (`Total sent`, the binary's own, `Average NAME rate per sec`).
/// `run` gets the destination, the Ctrl-C flag and a milestone printer.
pub fn main<E: std::fmt::Display>(
    name: &str,
    phase: &str,
    destination: Result<Destination, String>,
    run: impl FnOnce(Destination, &AtomicBool, &mut dyn FnMut(&str)) -> Result<Finished, E>,
) -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let destination = match destination {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{name}-workload: {e}");
            return ExitCode::from(2);
        }
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("{name}-workload: cannot install the Ctrl-C handler: {e}");
        return ExitCode::FAILURE;
    }
    println!("Phase: {phase} destination: {destination:?}");
    let mut on_event = |e: &str| println!("[{name}-workload] {e}");
    match run(destination, &interrupted, &mut on_event) {
        Ok(finished) => {
            if interrupted.load(Ordering::Relaxed) {
                println!("[{name}-workload] interrupted: the run ended early");
            }
            println!("{}", finished.summary.total_line(finished.packets));
            for line in &finished.extra_lines {
                println!("{line}");
            }
            println!("{}", finished.summary.average_line(name));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}-workload: {e}");
            ExitCode::FAILURE
        }
    }
}
