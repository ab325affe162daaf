//! `loom-fleet`: fleet-wide SQL over a tree `loom export` wrote (DataFusion,
//! crate `fleet`). Users run it as `loom fleet query ...`, which execs this
//! binary: DataFusion stays out of `loom` and is built once.

use clap::{Parser, Subcommand, ValueEnum};

/// Output format, as `loom query`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Aligned columns.
    Table,
    /// Comma-separated, one header line.
    Csv,
    /// An array of objects, numbers as numbers.
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Answer SQL (DataFusion's dialect) over an exported tree: every
    /// measurement is a table with columns time, tags, fields and the
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

/// Fleet-wide SQL over exported Loom Parquet trees.
#[derive(Parser, Debug)]
#[command(name = "loom fleet")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn main() -> anyhow::Result<()> {
    let Command::Query { from, format, sql } = Cli::parse().command;
    let f = fleet::Fleet::open(&from)?;
    let batches = f.query(&sql)?;
    let out = match format {
        Format::Table => fleet::render::table(&batches),
        Format::Csv => fleet::render::csv(&batches),
        Format::Json => serde_json::to_string_pretty(&fleet::render::json(&batches))? + "\n",
    };
    print!("{out}");
    Ok(())
}
