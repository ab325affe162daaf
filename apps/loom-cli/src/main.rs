//! `loom`: InfluxQL questions to a store or a server, and a store summary.
//!
//! - `loom query --store DIR 'SELECT …'` opens the store read-only (while a
//!   writer holds it, it sees what is durable) and answers locally;
//! - `loom query --server URL 'SELECT …'` asks a Loom (or InfluxDB 1.x) server;
//! - `loom info --store DIR` lists every series: fields, index, records,
//!   time span, and the store's bytes on disk.

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
