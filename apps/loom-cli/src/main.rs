//! `loom`: InfluxQL questions to a store or a server, and a store summary.
//!
//! - `loom query --store DIR 'SELECT …'` opens the store read-only (while a
//!   writer holds it, it sees what is durable) and answers locally;
//! - `loom query --server URL 'SELECT …'` asks a Loom (or InfluxDB 1.x) server;
//! - `loom info --store DIR` lists every series: fields, index, records,
//!   time span, and the store's bytes on disk.
//! - `loom export --store DIR --to URL` exports the store's durable records
//!   as Parquet (hive layout) to a directory or an S3 bucket, resuming
//!   where the last export to that target stopped (crate `export`).
//! - `loom fleet query --from URL 'SQL'` answers SQL over such a tree (every
//!   host's files) with DataFusion: it runs the `loom-fleet` binary (crate
//!   `fleet`), where DataFusion is built once.

mod info;
mod render;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

/// Output format of `loom query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Aligned columns.
    Table,
    /// Comma-separated, one header per series.
    Csv,
    /// InfluxDB's JSON response.
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Answer InfluxQL statements (`;`-separated).
    Query {
        /// Store directory, opened read-only.
        #[arg(long, conflicts_with = "server", required_unless_present = "server")]
        store: Option<PathBuf>,
        /// Server base URL (e.g. http://127.0.0.1:8186).
        #[arg(long)]
        server: Option<String>,
        /// Token for a server started with --auth-token-file.
        #[arg(long)]
        token: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        /// Most rows per statement (local queries).
        #[arg(long, default_value_t = 1_000_000)]
        max_rows: usize,
        /// The statements.
        statement: String,
    },
    /// Describe a store: series, fields, index, records, time span, size.
    Info {
        /// Store directory, opened read-only.
        #[arg(long)]
        store: PathBuf,
    },
    /// Export the store's durable records as Parquet, exactly once:
    /// resumes from the log position the target's manifest holds.
    Export {
        /// Store directory, opened read-only.
        #[arg(long)]
        store: PathBuf,
        /// Target: a directory, file:///dir or s3://bucket/prefix
        /// (credentials and endpoint from AWS_* variables).
        #[arg(long)]
        to: String,
        /// `host` of series without their own `host` tag, and the
        /// exporter's name in the target. Default: this machine's hostname.
        #[arg(long)]
        host: Option<String>,
        /// Most MiB of the store's log one batch covers (bounds memory).
        #[arg(long, default_value_t = 64)]
        batch_mib: u64,
    },
    /// Fleet-wide questions over exported Parquet trees.
    Fleet {
        #[command(subcommand)]
        command: FleetCommand,
    },
}

#[derive(Subcommand, Debug)]
enum FleetCommand {
    /// Answer SQL (DataFusion's dialect) over a tree `loom export` wrote:
    /// every measurement is a table with columns time, tags, fields and the
    /// partition columns host, date, hour; `percentile(x, N)` is InfluxDB's
    /// exact percentile (N in percent).
    Query {
        /// The tree: a directory, file:///dir or s3://bucket/prefix.
        #[arg(long)]
        from: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        /// The statement.
        sql: String,
    },
}

/// Ask Loom questions in InfluxQL.
#[derive(Parser, Debug)]
#[command(
    name = "loom",
    about = "Ask Loom questions in InfluxQL; describe a store"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Query {
            store,
            server,
            token,
            format,
            max_rows,
            statement,
        } => {
            let json = match (store, server) {
                (Some(dir), _) => {
                    let reader = loom::open_read_only(&dir)
                        .with_context(|| format!("opening {} read-only", dir.display()))?;
                    let limits = influxql::Limits {
                        deadline: None,
                        max_rows,
                        // A store opened read-only: no ingest to leave
                        // cores to.
                        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
                        ..influxql::Limits::default()
                    };
                    // Refusals print like the server's 400 answers, not as a crash.
                    match influxql::run(&reader.snapshot(), &statement, influxql::now_ns(), &limits)
                    {
                        Ok(results) => influxql::encode_results(&results, influxql::Epoch::Unit(1)),
                        Err(e) => influxql::encode_error(&e.to_string()),
                    }
                }
                (None, Some(url)) => remote(&url, token.as_deref(), &statement)?,
                (None, None) => anyhow::bail!("give --store DIR or --server URL"),
            };
            let out = match format {
                Format::Json => serde_json::to_string_pretty(&json)?,
                Format::Table => render::table(&json),
                Format::Csv => render::csv(&json),
            };
            print!("{out}");
            if !out.ends_with('\n') {
                println!();
            }
            if render::has_error(&json) {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Info { store } => {
            print!("{}", info::describe(&store)?);
            Ok(())
        }
        Command::Export {
            store,
            to,
            host,
            batch_mib,
        } => export_store(&store, &to, host, batch_mib),
        Command::Fleet {
            command: FleetCommand::Query { from, format, sql },
        } => fleet_query(&from, format, &sql),
    }
}

fn remote(url: &str, token: Option<&str>, q: &str) -> anyhow::Result<serde_json::Value> {
    let client = reqwest::blocking::Client::new();
    let mut req = client
        .post(format!("{}/query", url.trim_end_matches('/')))
        .form(&[("q", q), ("epoch", "ns")]);
    if let Some(t) = token {
        req = req.header("Authorization", format!("Token {t}"));
    }
    let resp = req.send().with_context(|| format!("asking {url}"))?;
    let status = resp.status();
    let body = resp.text().context("reading the response")?;
    let json: serde_json::Value = serde_json::from_str(&body)
        .with_context(|| format!("{url} answered {status} with non-JSON: {body}"))?;
    Ok(json)
}

/// `loom export`: one round over what the store holds durably now.
fn export_store(
    store: &std::path::Path,
    to: &str,
    host: Option<String>,
    batch_mib: u64,
) -> anyhow::Result<()> {
    let reader = loom::open_read_only(store)
        .with_context(|| format!("opening {} read-only", store.display()))?;
    let target = export::Target::open(to)?;
    let mut cfg = export::ExportConfig::new(host.unwrap_or_else(export::hostname));
    cfg.max_batch_log_bytes = batch_mib.max(1) << 20;
    let mut exporter = export::Exporter::open(target, cfg)?;
    let snap = reader.durable_snapshot();
    let start = std::time::Instant::now();
    let before = exporter.manifest().position;
    let r = exporter.export(&snap)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "exported {} records in {} files ({:.1} MB Parquet, {:.1} B/record) in {:.2} s ({:.2} M records/s); log position {} -> {}",
        r.records,
        r.files,
        r.bytes as f64 / 1e6,
        if r.records > 0 { r.bytes as f64 / r.records as f64 } else { 0.0 },
        secs,
        r.records as f64 / secs.max(1e-9) / 1e6,
        before,
        r.position
    );
    let m = exporter.manifest();
    println!(
        "target {}: {} records exported in all, {} files; lost to retention before export: {} records, {} log bytes",
        to, m.records_exported, m.files_written, m.records_lost_to_retention, m.log_bytes_lost_to_retention
    );
    if r.records_without_schema > 0 {
        println!(
            "not exported: {} records of sources without a schema",
            r.records_without_schema
        );
    }
    Ok(())
}

/// `loom fleet query`: execs `loom-fleet` (crate `fleet`, DataFusion), the
/// binary beside this one or else on `PATH`, so that DataFusion is built
/// once into one binary and `loom` stays small. `loom-fleet` is its own
/// Cargo workspace (`make test`'s build leaves DataFusion out): when it is
/// missing, the error says how to build it.
fn fleet_query(from: &str, format: Format, sql: &str) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let beside = std::env::current_exe()
        .ok()
        .map(|e| e.with_file_name("loom-fleet"))
        .filter(|p| p.exists());
    let bin = beside.unwrap_or_else(|| PathBuf::from("loom-fleet"));
    let format = match format {
        Format::Table => "table",
        Format::Csv => "csv",
        Format::Json => "json",
    };
    let err = std::process::Command::new(&bin)
        .args(["query", "--from", from, "--format", format, "--", sql])
        .exec();
    if err.kind() == std::io::ErrorKind::NotFound {
        anyhow::bail!(
            "loom fleet query runs the loom-fleet binary (DataFusion), found neither beside loom ({}) nor on PATH: build it with `make fleet-build` in Loom's source tree (DataFusion, its own workspace: it copies loom-fleet beside loom in target/release/)",
            std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(|d| d.display().to_string()))
                .unwrap_or_default()
        );
    }
    Err(err).with_context(|| format!("running {}", bin.display()))
}
