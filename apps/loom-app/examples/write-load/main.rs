//! `write-load`: the `/write` (line protocol) ingest benchmark and the
//! dashboard-panel latency benchmark, run against loom-app or influxd alike.
//!
//! Generates `--hosts` series of Grafana-style host metrics (measurement
//! `cpu`, tags `host` and `region`, fields `usage`, `idle`, `requests`,
//! `duration_us`) over `--data-seconds` ending a minute ago, one point per
//! host every `--step-ms`, as line protocol bodies of `--batch` points
//! (precision ns, whole µs). `--writers` concurrent writers each send the
//! bodies of their own hosts, in time order; every body must be answered
//! 204 (a 503 is retried after a pause). Then the point count is polled
//! until every point is visible (zero loss), and the 8 panel statements of
//! a dashboard over the data's hour run `--repeat` times each.
//!
//! Output lines (stable, `key=value`): `WRITE-LOAD …` (sizes),
//! `WRITE-INGEST …` (points/s, loss), `PANEL …` (one per statement).
//!
//!   write-load --url http://127.0.0.1:18186 --writers 4
//!   write-load --url http://127.0.0.1:8086 --writers 1

use std::time::{Duration, Instant};

use clap::Parser;
use influx_app::client::Client;

#[derive(Parser, Debug)]
#[command(about = "/write ingest and dashboard panel latency: loom-app vs influxd")]
struct Args {
    /// The InfluxDB 1.x API (loom-app's --http, or influxd).
    #[arg(long)]
    url: String,
    /// Database name.
    #[arg(long, default_value = "bench")]
    db: String,
    /// Concurrent writers (the hosts are split among them).
    #[arg(long, default_value_t = 1)]
    writers: usize,
    /// Series (hosts).
    #[arg(long, default_value_t = 8)]
    hosts: usize,
    /// Seconds of data time.
    #[arg(long, default_value_t = 3600)]
    data_seconds: u64,
    /// One point per host every this many ms.
    #[arg(long, default_value_t = 100)]
    step_ms: u64,
    /// Points per /write body.
    #[arg(long, default_value_t = 5000)]
    batch: usize,
    /// Repetitions of each panel statement.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Bodies of one host's points, `batch` per body, in time order.
fn host_bodies(args: &Args, host: usize, t0_ns: u64) -> Vec<(bytes::Bytes, u64)> {
    let region = ["eu", "us", "ap"][host % 3];
    let n = args.data_seconds * 1000 / args.step_ms;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ (host as u64 + 1);
    let mut requests = 0u64;
    let mut out = Vec::new();
    let mut body = String::new();
    let mut in_body = 0u64;
    for k in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        requests += x % 100;
        let usage = (x % 10_000) as f64 / 100.0;
        let t = t0_ns + k * args.step_ms * 1_000_000;
        body.push_str(&format!(
            "cpu,host=h{host},region={region} usage={usage},idle={},requests={requests}i,duration_us={}i {t}\n",
            100.0 - usage,
            50 + (x >> 32) % 5000
        ));
        in_body += 1;
        if in_body as usize == args.batch {
            out.push((bytes::Bytes::from(std::mem::take(&mut body)), in_body));
            in_body = 0;
        }
    }
    if in_body > 0 {
        out.push((bytes::Bytes::from(body), in_body));
    }
    out
}

async fn count(client: &Client) -> u64 {
    match client.query("SELECT count(usage) FROM cpu").await {
        Ok(t) => t.first().and_then(|t| t.first_u64("count")).unwrap_or(0),
        Err(_) => 0,
    }
}

/// The dashboard: 8 panels in the shapes Grafana's query editor builds.
fn panels(from_ms: u64, to_ms: u64) -> Vec<String> {
    let tf = format!("time >= {from_ms}ms and time <= {to_ms}ms");
    vec![
        format!("SELECT mean(\"usage\") FROM \"cpu\" WHERE (\"host\" =~ /^(h1|h3)$/) AND {tf} GROUP BY time(10s), \"host\" fill(null)"),
        format!("SELECT count(\"usage\") FROM \"cpu\" WHERE {tf} GROUP BY time(10s) fill(0)"),
        format!("SELECT max(\"duration_us\") / 1000 FROM \"cpu\" WHERE (\"host\" =~ /^h2$/) AND {tf} GROUP BY time(10s) fill(none)"),
        format!("SELECT non_negative_derivative(mean(\"requests\"), 1s) FROM \"cpu\" WHERE {tf} GROUP BY time(10s), \"host\" fill(null)"),
        format!("SELECT percentile(\"duration_us\", 99) FROM \"cpu\" WHERE (\"region\" = 'eu') AND {tf} GROUP BY time(1m) fill(null)"),
        format!("SELECT last(\"usage\") FROM \"cpu\" WHERE {tf} GROUP BY \"host\""),
        "SHOW TAG VALUES FROM \"cpu\" WITH KEY = \"host\" WHERE \"region\" =~ /^(eu|us)$/".to_string(),
        format!("SELECT mean(\"usage\") - mean(\"idle\") FROM \"cpu\" WHERE (\"host\" =~ /^(h1|h2|h3)$/) AND {tf} GROUP BY time(1m) fill(previous)"),
    ]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    if args.writers == 0 || args.hosts < args.writers || args.batch == 0 || args.step_ms == 0 {
        return Err(
            "--writers, --hosts, --batch, --step-ms must be positive (hosts ≥ writers)".into(),
        );
    }
    let t0_s = now_s() - args.data_seconds - 60;
    let t0_ns = t0_s * 1_000_000_000;
    let mut per_writer: Vec<Vec<(bytes::Bytes, u64)>> = vec![Vec::new(); args.writers];
    let mut total = 0u64;
    let mut bytes_total = 0usize;
    for h in 0..args.hosts {
        for b in host_bodies(&args, h, t0_ns) {
            total += b.1;
            bytes_total += b.0.len();
            per_writer[h % args.writers].push(b);
        }
    }
    println!(
        "WRITE-LOAD url={} writers={} hosts={} points={total} data_s={} batch={} line_bytes_per_point={}",
        args.url,
        args.writers,
        args.hosts,
        args.data_seconds,
        args.batch,
        bytes_total as u64 / total.max(1)
    );
    let client =
        Client::new(&args.url, &args.db, Duration::from_secs(120)).map_err(|e| e.to_string())?;
    let _ = client.create_database().await;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for bodies in per_writer {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut retries = 0u64;
            for (body, n) in bodies {
                loop {
                    match c.write(body.clone(), n).await {
                        Ok(()) => break,
                        Err(e) => {
                            retries += 1;
                            if retries > 1000 {
                                return Err(format!("write failed 1000 times: {e}"));
                            }
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            }
            Ok::<u64, String>(retries)
        }));
    }
    let mut retries = 0;
    for t in tasks {
        retries += t.await.map_err(|e| e.to_string())??;
    }
    let acked = start.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = count(&client).await;
    while seen < total && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = count(&client).await;
    }
    let visible = start.elapsed().as_secs_f64();
    println!(
        "WRITE-INGEST writers={} points={total} acked_s={acked:.3} points_per_s={:.0} visible_s={visible:.3} stored={seen} lost={} retries={retries}",
        args.writers,
        total as f64 / acked,
        total.saturating_sub(seen)
    );
    let from_ms = t0_s * 1000;
    let to_ms = (t0_s + args.data_seconds) * 1000 - 1;
    for (k, q) in panels(from_ms, to_ms).iter().enumerate() {
        let mut ms = Vec::new();
        let mut rows = 0;
        for _ in 0..args.repeat {
            let t = Instant::now();
            let tables = client.query(q).await.map_err(|e| format!("{q}: {e}"))?;
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            rows = tables.iter().map(|t| t.rows.len()).sum::<usize>();
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "PANEL n={} ms_median={:.1} ms_max={:.1} rows={rows} q={q}",
            k + 1,
            ms[ms.len() / 2],
            ms[ms.len() - 1]
        );
    }
    Ok(())
}
