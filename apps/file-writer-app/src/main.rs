//! `file-writer-app`: receive telemetry frames over TCP, append them to a file.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use file_writer_app::FileWriter;

/// Receive the telemetry frame stream on TCP and append it to a file,
/// fsyncing once a second.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    addr: String,
    /// Output file (truncated at start).
    #[arg(long, default_value = "/tmp/loom-file-writer.frames")]
    output_path: PathBuf,
    /// Exit after this many connections have ended (default: run forever).
    #[arg(long)]
    connections: Option<usize>,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    let writer = match FileWriter::create(&args.output_path) {
        Ok(w) => Arc::new(w),
        Err(e) => {
            eprintln!("file-writer-app: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listener = match TcpListener::bind(&args.addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("file-writer-app: cannot listen on {}: {e}", args.addr);
            return ExitCode::FAILURE;
        }
    };
    println!(
        "[file-writer-app] listening on {}, writing {}",
        args.addr,
        args.output_path.display()
    );
    let server = {
        let w = writer.clone();
        let max = args.connections;
        std::thread::spawn(move || w.serve(listener, max))
    };

    let start = Instant::now();
    let mut second = 0u64;
    let (mut last_records, mut last_bytes) = (0u64, 0u64);
    loop {
        second += 1;
        let next = start + Duration::from_secs(second);
        while Instant::now() < next && !server.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Err(e) = writer.sync() {
            eprintln!("file-writer-app: {e}");
            return ExitCode::FAILURE;
        }
        let records = writer.received.records.load(Ordering::Relaxed);
        let bytes = writer.received.bytes.load(Ordering::Relaxed);
        println!(
            "Received: {} records/s, {:.2} MB/s, Total: {} records, {} bytes",
            records - last_records,
            (bytes - last_bytes) as f64 / 1e6,
            records,
            bytes
        );
        (last_records, last_bytes) = (records, bytes);
        if server.is_finished() {
            break;
        }
    }
    match server.join() {
        Ok(Ok(())) => {
            println!(
                "Total received: {} records in {} batches, {} bytes",
                writer.received.records.load(Ordering::Relaxed),
                writer.received.batches.load(Ordering::Relaxed),
                writer.received.bytes.load(Ordering::Relaxed)
            );
            println!(
                "{}",
                telemetry::cpu_exit_line(writer.received.records.load(Ordering::Relaxed))
            );
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("file-writer-app: {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("file-writer-app: the server thread panicked");
            ExitCode::FAILURE
        }
    }
}
