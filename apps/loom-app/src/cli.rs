//! Command-line flags of `loom-app`.

use std::path::PathBuf;

use clap::Parser;

use endpoint::output::parse_window;

use crate::counters::DEFAULT_MAX_CONNECTIONS;
use crate::ingest::TimestampMode;
use crate::queries::Query;

/// Receive telemetry over TCP and store it in Loom: every setting of
/// `loom-app`, the flags (`Cli::parse`) or built in code from
/// `Cli::default()` (the flags' defaults); the library calls it `Config`.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "loom-app",
    about = "Receive telemetry over TCP and store it in Loom"
)]
pub struct Cli {
    /// Address of the telemetry stream (TCP, wire protocol versions 1 and
    /// 2). A non-loopback address needs --auth-token-file: senders then
    /// present the token in their HELLO (version 2); others are closed,
    /// logged and counted (`auth_refused`).
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub addr: String,
    /// Store directory, created if missing; an existing store is reopened
    /// and appended to, never deleted. Default: `/var/lib/loom` as root,
    /// otherwise `$XDG_DATA_HOME/loom` or `~/.local/share/loom`.
    #[arg(long, alias = "mach-path", conflicts_with = "temp_store")]
    pub loom_path: Option<PathBuf>,
    /// Store in a fresh directory created under DIR and deleted at exit
    /// (unless --keep-data): for experiments and benchmarks, which start
    /// from an empty store each run.
    #[arg(long, value_name = "DIR")]
    pub temp_store: Option<PathBuf>,
    /// Keep the --temp-store directory at exit (any other store is always
    /// kept).
    #[arg(long)]
    pub keep_data: bool,
    /// TCP ingest is TLS only, with this PEM certificate chain (leaf
    /// first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Seconds between progress lines.
    #[arg(long, default_value_t = 10.0)]
    pub report_interval_s: f64,
    /// Named questions to ask periodically or at the end (comma
    /// separated): the paper's workload questions. None by default; any
    /// question can be asked in InfluxQL over the HTTP API (`--http`).
    #[arg(
        long = "question",
        alias = "query",
        value_name = "NAME",
        value_enum,
        value_delimiter = ','
    )]
    pub query: Vec<Query>,
    /// Seconds between periodic queries.
    #[arg(long, default_value_t = 120.0)]
    pub query_interval_s: f64,
    /// Number of periodic query rounds (ablation: repetitions after the cut-off).
    #[arg(long, default_value_t = 5)]
    pub query_count: u32,
    /// Ablation lookback S in seconds: ingest 120 + S + 5 s of data, then count
    /// over the 120 s window ending S + 5 s before the newest data.
    #[arg(long, default_value_t = 20)]
    pub ablation_lookback: u64,
    /// Store records under their arrival time (wall clock, µs since the Unix
    /// epoch) or their own time mapped onto the epoch (see --event-offset-us).
    #[arg(long, value_enum, default_value = "arrival")]
    pub timestamps: TimestampMode,
    /// With --timestamps event: store each record at its own time plus this
    /// many µs. Default: chosen at the first record so that it lands at the
    /// current wall-clock time (or just after the store's newest record, if
    /// that is later), keeping the recorded spacing. 0 stores record times
    /// as they are.
    #[arg(long)]
    pub event_offset_us: Option<u64>,
    /// With --timestamps event: hold each source's records this many ms of
    /// event time and store them in time order, so interleaved batches of a
    /// workload's threads keep their exact times. A record later than this
    /// (older than its source's newest stored record) is stored at its own
    /// time in a late sibling of its source (`late stored`; refused and
    /// counted as `late` only when all 8 siblings hold newer records): a
    /// record's time is never moved. Held records are
    /// released after 1 s without new data. 0 turns the stage off. The
    /// default 500 ms is sized from live RocksDB P2/P3 recordings on a
    /// 2-core machine (`data-stats` prints a recording's disorder): 99.99 %
    /// of records arrive within 0.4 s of the newest event time, and 500 ms
    /// left 0.0001–0.0002 % of them late (now stored late). The bound is
    /// structural: a KV op or syscall is stamped with its start but sent at
    /// its end, plus up to 10 ms in its worker's batch, plus scheduling
    /// delay of the workload's threads.
    #[arg(long, default_value_t = 500)]
    pub reorder_window_ms: u64,
    /// Ask the questions once when ingest ends (see --stop-after-connections)
    /// instead of periodically.
    #[arg(long)]
    pub query_at_end: bool,
    /// Window for --query-at-end, `T0,T1` in stored µs, inclusive (default: all data).
    #[arg(long, value_parser = parse_window)]
    pub query_window_us: Option<(u64, u64)>,
    /// Stop ingesting after this many connections have ended.
    #[arg(long)]
    pub stop_after_connections: Option<u64>,
    /// Also print `ANSWER ...` lines for scripts and tests.
    #[arg(long)]
    pub machine_output: bool,
    /// Once every listener is bound, write `{"pid":…, "tcp":"ip:port",
    /// "http":…, "otlp_grpc":…, "otlp_http":…}` here (`null` for one that
    /// is off; written to a temporary file and renamed), so a supervisor or
    /// a test can pass port 0 everywhere and learn the ports.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// Messages the ingest queue holds before receivers drop (a message is the frames that
    /// arrived together on one connection, up to 256 KiB).
    #[arg(long, default_value_t = 4096)]
    pub queue_capacity: usize,
    /// Bytes the ingest queue holds before receivers drop (with
    /// --queue-capacity, whichever is reached first): the queue's memory bound.
    #[arg(long, default_value_t = endpoint::ReceiveConfig::new(0).max_queued_bytes)]
    pub queue_max_bytes: u64,
    /// Largest accepted frame payload in bytes.
    #[arg(long, default_value_t = telemetry::wire::DEFAULT_MAX_PAYLOAD)]
    pub max_payload_bytes: usize,
    /// Publish ingested data to readers at least every this many ms.
    #[arg(long, default_value_t = 5)]
    pub sync_interval_ms: u64,
    /// Make ingested data durable at least every this many ms: a crash
    /// (SIGKILL, power loss) loses at most this interval plus what was in
    /// flight.
    #[arg(long, default_value_t = 1000)]
    pub persist_interval_ms: u64,
    /// While frames of acknowledged TCP senders (wire protocol 2, HELLO
    /// flag "acks wanted") wait to be durable, persist at least every this
    /// many ms: their acknowledgement latency is about this plus the
    /// reorder window, and it bounds what such a sender must keep.
    #[arg(long, default_value_t = 100)]
    pub ack_interval_ms: u64,
    /// zstd level of the chunks written to disk (compressed off the ingest
    /// thread); 0 stores them uncompressed.
    #[arg(long, default_value_t = 1)]
    pub compression_level: i32,
    /// Nice value of the thread that compresses and writes chunks: above 0
    /// it takes only the CPU the ingest path leaves, and when it falls
    /// behind it compresses cheaper or stores chunks uncompressed (counted
    /// on the "store compression" line) instead of records being dropped.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub flusher_nice: i32,
    /// Drop the oldest data (whole segments) while the store holds more than
    /// this many bytes.
    #[arg(long)]
    pub retention_bytes: Option<u64>,
    /// Bytes of range-index summaries held in memory, whatever the store's
    /// size: up to half for the newest data's, the rest for older data's
    /// read back from the segment index files by queries (`loom::Config::
    /// index_cache_bytes`, which says why 1 GiB).
    #[arg(long, default_value_t = 1 << 30)]
    pub index_cache_bytes: usize,
    /// Drop data (whole segments) older than this many seconds before the
    /// newest record.
    #[arg(long)]
    pub retention_age_s: Option<u64>,
    /// Address of the InfluxDB 1.x query API (`/ping`, `/query`), or `off`.
    /// Default 127.0.0.1:8186 (8086 stays free for a real InfluxDB); when the
    /// default port is taken the API is skipped with a warning, an explicit
    /// address that cannot be bound is an error. A non-loopback address
    /// needs --auth-token-file.
    #[arg(long)]
    pub http: Option<String>,
    /// File holding the token every HTTP request must carry (as the `p`
    /// parameter, the Basic auth password or `Authorization: Token …`), and
    /// every telemetry-stream sender must present in its HELLO.
    #[arg(long)]
    pub auth_token_file: Option<PathBuf>,
    /// Per-query time limit of the HTTP API, ms.
    #[arg(long, default_value_t = 10_000)]
    pub http_query_timeout_ms: u64,
    /// Most rows one statement of the HTTP API may return.
    #[arg(long, default_value_t = 100_000)]
    pub http_max_rows: usize,
    /// Largest HTTP request body, bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub http_max_body_bytes: usize,
    /// Largest `/write` body (line protocol), bytes, as sent and once
    /// decompressed (InfluxDB's default `max-body-size`).
    #[arg(long, default_value_t = 25_000_000)]
    pub http_max_write_bytes: usize,
    /// Queries the HTTP API runs at once.
    #[arg(long, default_value_t = 1)]
    pub http_query_threads: usize,
    /// Threads one statement's `GROUP BY time` buckets are answered on:
    /// the query's own and helpers at nice 10, so ingest keeps its CPU
    /// (1: the query's thread alone).
    #[arg(long, default_value_t = 2)]
    pub http_statement_threads: usize,
    /// Longest InfluxQL query text the HTTP API parses, bytes (longer: 400).
    #[arg(long, default_value_t = 256 << 10)]
    pub http_max_query_bytes: usize,
    /// Most statements in one InfluxQL query (more: 400).
    #[arg(long, default_value_t = 1000)]
    pub http_max_statements: usize,
    /// Address of the OTLP/gRPC receiver (traces, logs, metrics), or `off`.
    /// Default 127.0.0.1:4317; when the default port is taken the receiver
    /// is skipped with a warning. A non-loopback address needs
    /// --auth-token-file (requests then carry `authorization: Bearer …`).
    #[arg(long)]
    pub otlp_grpc: Option<String>,
    /// Address of the OTLP/HTTP receiver (`/v1/traces`, `/v1/logs`,
    /// `/v1/metrics`; protobuf or JSON), or `off`. Default 127.0.0.1:4318;
    /// otherwise as --otlp-grpc.
    #[arg(long)]
    pub otlp_http: Option<String>,
    /// Most series (distinct measurement + tag sets) the store holds, one
    /// limit for every way in (telemetry stream, OTLP): records of further
    /// series are refused and counted (`series_refused`; OTLP also in its
    /// partial-success response). `--otlp-max-series` is an alias.
    #[arg(long, alias = "otlp-max-series", default_value_t = 100_000)]
    pub max_series: u64,
    /// Largest OTLP request body, bytes (also after decompression).
    #[arg(long, default_value_t = 8 << 20)]
    pub otlp_max_body_bytes: usize,
    /// Longest wait for an OTLP/HTTP request body, ms: a client that
    /// stalls mid-body gets 408 and its connection is closed.
    #[arg(long, default_value_t = 10_000)]
    pub otlp_read_timeout_ms: u64,
    /// Hold OTLP items this many ms of their own time and store each series
    /// in time order (spans are exported when they end, so their start
    /// times arrive out of order by up to the longest span plus the export
    /// interval). An item later than that (older than its series' newest
    /// stored item) is stored at its own time in a late sibling of its
    /// series; refused in the partial-success answer and counted as `late`
    /// only when all 8 siblings hold newer items. 0 turns the stage off.
    #[arg(long, default_value_t = 5000)]
    pub otlp_reorder_window_ms: u64,
    /// When OTLP requests are answered with success: `durable` once every
    /// item taken from the request is in the fsynced intake log
    /// (`<store>/otlp-intake/`; survives a crash), `queued` once the items
    /// are queued for ingest (a crash loses what the reorder window holds
    /// and the last --persist-interval-ms).
    #[arg(long, value_enum, default_value_t = crate::otlp_ingest::AckMode::Durable)]
    pub otlp_ack: crate::otlp_ingest::AckMode,
    /// With --otlp-ack durable: longest wait for a request's items to be
    /// durable, ms, before it is answered "retry later" (gRPC UNAVAILABLE,
    /// HTTP 503); below the exporters' own timeout (10 s by default).
    #[arg(long, default_value_t = 5000)]
    pub otlp_ack_timeout_ms: u64,
    /// Threads serving OTLP requests (decoding and converting them).
    #[arg(long, default_value_t = 2)]
    pub otlp_threads: usize,
    /// Most connections open at once on each listener (telemetry stream,
    /// InfluxDB API, OTLP/gRPC, OTLP/HTTP, each its own budget); one more
    /// is closed as soon as it is accepted, counted and logged once per
    /// 10 s. Each telemetry-stream connection has its receiving thread, so
    /// this also bounds those threads.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// A telemetry-stream sender must complete a frame at least this
    /// often, and an OTLP connection must get an answer this often, or it
    /// is closed (idle and slowloris senders alike), ms. Above
    /// --otlp-read-timeout-ms + --otlp-ack-timeout-ms. The InfluxDB API
    /// closes idle connections after its own 10 s header-read timeout.
    #[arg(long, default_value_t = 60_000)]
    pub idle_timeout_ms: u64,
    /// Export durable records as Parquet (hive layout, exactly once) to this
    /// target every --export-interval-s: a directory, file:///dir or
    /// s3://bucket/prefix (credentials and endpoint from AWS_* variables).
    #[arg(long)]
    pub export_to: Option<String>,
    /// Seconds between two export rounds.
    #[arg(long, default_value_t = 10)]
    pub export_interval_s: u64,
    /// This host's name in exported files: the `host` of series without a
    /// `host` tag of their own, and the exporter's name in the target.
    /// Default: the machine's hostname.
    #[arg(long)]
    pub host: Option<String>,
}

impl Default for Cli {
    /// Every flag at its default (what a plain `loom-app` runs with).
    fn default() -> Self {
        Cli::parse_from(["loom-app"])
    }
}

impl Cli {
    /// Checks the relations clap cannot express.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.report_interval_s > 0.0,
            "--report-interval-s must be positive"
        );
        anyhow::ensure!(
            self.query_interval_s > 0.0,
            "--query-interval-s must be positive"
        );
        anyhow::ensure!(self.queue_capacity > 0, "--queue-capacity must be positive");
        anyhow::ensure!(
            self.export_interval_s > 0,
            "--export-interval-s must be positive"
        );
        anyhow::ensure!(
            self.persist_interval_ms > 0,
            "--persist-interval-ms must be positive"
        );
        anyhow::ensure!(
            self.event_offset_us.is_none() || self.timestamps == TimestampMode::Event,
            "--event-offset-us needs --timestamps event"
        );
        anyhow::ensure!(
            self.http_query_timeout_ms > 0,
            "--http-query-timeout-ms must be positive"
        );
        anyhow::ensure!(self.http_max_rows > 0, "--http-max-rows must be positive");
        anyhow::ensure!(
            self.http_statement_threads > 0 && self.http_statement_threads <= 64,
            "--http-statement-threads must be 1 to 64"
        );
        anyhow::ensure!(
            self.http_query_threads > 0,
            "--http-query-threads must be positive"
        );
        anyhow::ensure!(
            self.http_max_query_bytes > 0 && self.http_max_statements > 0,
            "--http-max-query-bytes and --http-max-statements must be positive"
        );
        anyhow::ensure!(self.max_series > 0, "--max-series must be positive");
        anyhow::ensure!(
            self.otlp_max_body_bytes > 0,
            "--otlp-max-body-bytes must be positive"
        );
        anyhow::ensure!(
            self.otlp_read_timeout_ms > 0,
            "--otlp-read-timeout-ms must be positive"
        );
        anyhow::ensure!(self.otlp_threads > 0, "--otlp-threads must be positive");
        anyhow::ensure!(
            self.otlp_ack_timeout_ms > 0,
            "--otlp-ack-timeout-ms must be positive"
        );
        anyhow::ensure!(
            self.max_connections > 0,
            "--max-connections must be positive"
        );
        anyhow::ensure!(
            self.idle_timeout_ms
                > self
                    .otlp_read_timeout_ms
                    .saturating_add(self.otlp_ack_timeout_ms),
            "--idle-timeout-ms {} must be above --otlp-read-timeout-ms + --otlp-ack-timeout-ms ({} ms): an OTLP request is answered within those",
            self.idle_timeout_ms,
            self.otlp_read_timeout_ms.saturating_add(self.otlp_ack_timeout_ms)
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_name_allowed_values() {
        let cli = Cli::try_parse_from([
            "loom-app",
            "--mach-path",
            "/tmp/x",
            "--query",
            "rocksdb-p2,ablation-timerange",
            "--timestamps",
            "event",
            "--event-offset-us",
            "0",
        ])
        .unwrap();
        assert_eq!(cli.query, vec![Query::RocksdbP2, Query::AblationTimerange]);
        assert_eq!(cli.loom_path, Some(PathBuf::from("/tmp/x")));
        assert!(cli.validate().is_ok());
        let err = Cli::try_parse_from(["loom-app", "--timestamps", "wall"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--timestamps") && err.contains("arrival") && err.contains("event"));
        let cli = Cli::try_parse_from(["loom-app", "--event-offset-us", "5"]).unwrap();
        assert!(cli
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--timestamps event"));
    }

    #[test]
    fn a_plain_start_asks_nothing_and_keeps_its_store() {
        let cli = Cli::try_parse_from(["loom-app"]).unwrap();
        assert!(cli.query.is_empty());
        assert_eq!(
            (cli.loom_path, cli.temp_store, cli.keep_data),
            (None, None, false)
        );
        let cli = Cli::try_parse_from([
            "loom-app",
            "--question",
            "rocksdb-p1",
            "--query",
            "rocksdb-p2",
        ])
        .unwrap();
        assert_eq!(cli.query, vec![Query::RocksdbP1, Query::RocksdbP2]);
        // A store is given or temporary, not both; TLS needs both files.
        assert!(
            Cli::try_parse_from(["loom-app", "--loom-path", "/a", "--temp-store", "/b"]).is_err()
        );
        assert!(Cli::try_parse_from(["loom-app", "--tls-cert", "/c"]).is_err());
        assert!(Cli::try_parse_from(["loom-app", "--tls-cert", "/c", "--tls-key", "/k"]).is_ok());
    }
}
