//! `otlp-load`: the OTLP ingest benchmark. Sends the same spans either to
//! loom-app over OTLP/gRPC or to influxd as line protocol through
//! influx-app's HTTP client, from `--clients` concurrent clients (one
//! service each, spans over the same `--data-seconds` of their own time),
//! checks that every span is stored (zero loss), then times the
//! p99.99-of-span-duration question over the window and checks its answer
//! against brute force.
//!
//!   otlp-load --target loom --grpc 127.0.0.1:14317 --query-url http://127.0.0.1:18186
//!   otlp-load --target influxdb --query-url http://127.0.0.1:8086
//!
//! Requests and bodies are encoded before the clock starts. Output lines
//! (stable, `key=value`): `OTLP-LOAD ...` (setup and sizes), `OTLP-INGEST
//! ...` (throughput, loss), `OTLP-QUERY ...` (one per question).

mod influx;
mod loom;
mod spans;

use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use influx_app::client::Client;
use prost::Message;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Target {
    /// loom-app over OTLP/gRPC.
    Loom,
    /// influxd over HTTP line protocol (influx-app's client).
    Influxdb,
}

#[derive(Parser, Debug)]
#[command(about = "OTLP span ingest and query benchmark: loom-app vs influxd")]
struct Args {
    #[arg(long, value_enum)]
    target: Target,
    /// loom-app's OTLP/gRPC address.
    #[arg(long, default_value = "127.0.0.1:14317")]
    grpc: String,
    /// InfluxDB 1.x API to query (loom-app's --http, or influxd).
    #[arg(long)]
    query_url: String,
    /// Concurrent clients (one service each).
    #[arg(long, default_value_t = 1)]
    clients: usize,
    /// Spans in all (split evenly over the clients).
    #[arg(long, default_value_t = 1_200_000)]
    spans: usize,
    /// Seconds of data time the spans' start times cover.
    #[arg(long, default_value_t = 60)]
    data_seconds: u64,
    /// Spans per OTLP request (the SDKs' batch processor default).
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// Points per /write body (influx-app's default).
    #[arg(long, default_value_t = 5000)]
    influx_batch: usize,
    /// Repetitions of each question.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

async fn count(client: &Client) -> u64 {
    match client.query("SELECT count(duration_us) FROM span").await {
        Ok(t) => t.first().and_then(|t| t.first_u64("count")).unwrap_or(0),
        Err(_) => 0,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    if args.clients == 0 || args.spans < args.clients || args.batch == 0 {
        return Err("--clients, --spans and --batch must be positive (spans ≥ clients)".into());
    }
    let window_ns = args.data_seconds * 1_000_000_000;
    // Two minutes ago, so the data window lies in the recent past.
    let t0 = (now_ns() - window_ns - 60_000_000_000) / 1_000_000_000 * 1_000_000_000;
    let (made, bodies) = prepare(&args, t0, window_ns);

    let query = Client::new(&args.query_url, "loom", Duration::from_secs(600))
        .map_err(|e| e.to_string())?;
    if args.target == Target::Influxdb {
        query.create_database().await.map_err(|e| e.to_string())?;
    }
    ingest(&args, &query, bodies).await?;
    ask_questions(&args, &query, &made[0], (t0, t0 + window_ns - 1)).await
}

/// One client's encoded bodies, each with its span count.
type Bodies = Vec<(bytes::Bytes, u64)>;

/// What each client sends, encoded before the clock starts: the spans it
/// made (for brute force) and its bodies. Prints the `OTLP-LOAD` line.
fn prepare(args: &Args, t0: u64, window_ns: u64) -> (Vec<Vec<spans::Made>>, Vec<Bodies>) {
    let per_client = args.spans / args.clients;
    let mut made = Vec::new();
    let mut bodies = Vec::new();
    let mut sizes = (0, 0, 0);
    for c in 0..args.clients {
        let (requests, m) = spans::client_requests(c, per_client, args.batch, t0, window_ns);
        made.push(m);
        let b: Bodies = match args.target {
            Target::Loom => requests
                .iter()
                .map(|r| {
                    let n = r.resource_spans[0].scope_spans[0].spans.len() as u64;
                    (bytes::Bytes::from(r.encode_to_vec()), n)
                })
                .collect(),
            Target::Influxdb => influx::bodies(&requests, args.influx_batch),
        };
        if c == 0 {
            sizes = sizes_per_span(&requests);
        }
        bodies.push(b);
    }
    let (proto_bytes, record_bytes, line_bytes) = sizes;
    let total = (per_client * args.clients) as u64;
    println!(
        "OTLP-LOAD target={:?} clients={} spans={total} data_s={} batch={} protobuf_bytes_per_span={proto_bytes} loom_record_bytes={record_bytes} line_protocol_bytes_per_span={line_bytes}",
        args.target, args.clients, args.data_seconds,
        if args.target == Target::Loom { args.batch } else { args.influx_batch },
    );
    (made, bodies)
}

/// Bytes per span from the first request: protobuf on the wire, Loom's
/// stored record, line protocol.
fn sizes_per_span(
    requests: &[opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest],
) -> (usize, usize, usize) {
    let r = &requests[0];
    let n = r.resource_spans[0].scope_spans[0].spans.len();
    let proto_bytes = r.encoded_len() / n;
    let registry = otlp::Registry::new(1000, []);
    let config = otlp::Config::default();
    let ctx = otlp::Context {
        registry: &registry,
        config: &config,
        arrival_us: 0,
    };
    let recs = otlp::convert_spans(r, &ctx).records;
    let record_bytes = recs.iter().map(|x| x.bytes.len()).sum::<usize>() / recs.len().max(1);
    let line_bytes = influx::bodies(&requests[..1], usize::MAX)
        .first()
        .map_or(0, |b| b.0.len() / n);
    (proto_bytes, record_bytes, line_bytes)
}

/// Sends every client's bodies concurrently, waits until every span is
/// stored (visible to queries), prints the `OTLP-INGEST` line.
async fn ingest(args: &Args, query: &Client, bodies: Vec<Bodies>) -> Result<(), String> {
    let total = (args.spans / args.clients * args.clients) as u64;
    let before = count(query).await;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for b in bodies {
        let grpc = args.grpc.clone();
        let writer = query.clone();
        let target = args.target;
        tasks.push(tokio::spawn(async move {
            match target {
                Target::Loom => loom::send(&grpc, b).await,
                Target::Influxdb => influx::send(writer, b).await,
            }
        }));
    }
    let mut sent = loom::Sent::default();
    for t in tasks {
        let s = t.await.map_err(|e| e.to_string())??;
        sent.spans += s.spans;
        sent.rejected += s.rejected;
        sent.retries += s.retries;
        sent.seconds = sent.seconds.max(s.seconds);
        sent.ack_us.extend(s.ack_us);
    }
    sent.ack_us.sort_unstable();
    let ack_ms = |q: f64| {
        let v = &sent.ack_us;
        let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len().max(1)) - 1;
        v.get(i).map_or(0.0, |&us| us as f64 / 1000.0)
    };
    let accepted_s = start.elapsed().as_secs_f64();
    // Stored: every span visible to queries.
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut stored = count(query).await - before;
    while stored < sent.spans && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stored = count(query).await - before;
    }
    let stored_s = start.elapsed().as_secs_f64();
    println!(
        "OTLP-INGEST target={:?} clients={} sent={total} accepted={} rejected={} retries={} stored={stored} loss={} accepted_s={accepted_s:.2} accepted_spans/s={:.0} stored_s={stored_s:.2} stored_spans/s={:.0} ack_p50_ms={:.2} ack_p99_ms={:.2}",
        args.target,
        args.clients,
        sent.spans,
        sent.rejected,
        sent.retries,
        total as i64 - stored as i64,
        sent.spans as f64 / accepted_s,
        stored as f64 / stored_s,
        ack_ms(0.50),
        ack_ms(0.99),
    );
    Ok(())
}

/// Times the p99.99 questions over [lo, hi] on the first client's service
/// and checks each answer against brute force over the spans it made;
/// prints an `OTLP-QUERY` line per question.
async fn ask_questions(
    args: &Args,
    query: &Client,
    made: &[spans::Made],
    (lo, hi): (u64, u64),
) -> Result<(), String> {
    let questions = [
        (
            "p9999-one-name",
            format!(
                "SELECT percentile(duration_us, 99.99) FROM span WHERE service = 'svc-0' AND \"name\" = '{}' AND time >= {lo} AND time <= {hi}",
                spans::NAMES[0]
            ),
            {
                let mut v: Vec<u64> = made.iter().filter(|m| m.name == 0).map(|m| m.duration_us).collect();
                spans::percentile(&mut v, 99.99)
            },
        ),
        (
            "p9999-service",
            format!("SELECT percentile(duration_us, 99.99) FROM span WHERE service = 'svc-0' AND time >= {lo} AND time <= {hi}"),
            {
                let mut v: Vec<u64> = made.iter().map(|m| m.duration_us).collect();
                spans::percentile(&mut v, 99.99)
            },
        ),
    ];
    for (name, q, want) in questions {
        let mut ms = Vec::new();
        let mut answer = None;
        for _ in 0..args.repeat.max(1) {
            let t = Instant::now();
            let r = query.query(&q).await.map_err(|e| e.to_string())?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            answer = r.first().and_then(|t| t.first_u64("percentile"));
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "OTLP-QUERY target={:?} clients={} question={name} spans_in_window={} ms_median={:.2} ms_min={:.2} ms_max={:.2} answer={answer:?} brute_force={want:?} ok={}",
            args.target,
            args.clients,
            if name == "p9999-one-name" { made.iter().filter(|m| m.name == 0).count() } else { made.len() },
            ms[ms.len() / 2],
            ms[0],
            ms[ms.len() - 1],
            answer == want,
        );
    }
    Ok(())
}
