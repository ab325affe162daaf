//! A valid query's latency alone and while other clients send hostile
//! statements in a loop, side by side, through the real HTTP API
//! (`influxql::http::serve` on loopback, one query thread as loom-app's
//! default) over an in-process store.
//!
//!   cargo run --release -p influxql --example hostile_latency -- \
//!       [--records-per-series N] [--rounds R] [--queries Q] [--hostile-clients H]
//!
//! Each round runs Q queries alone, then Q queries while H clients send the
//! hostile statements of `tests/support/hostile.rs` (each must get a 400)
//! as fast as they are answered; phases alternate so drifts of a shared
//! machine hit both. Prints per phase
//! `hostile-latency phase=<alone|hostile> queries=<n> median_ms=<m> p99_ms=<p>`,
//! the hostile requests answered per second, and the ratios.

#[path = "../tests/support/hostile.rs"]
mod hostile;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use influxql::http::{serve, HttpConfig};

/// The valid query: three aggregates per tag over a 10 s window.
const VALID: &str = "SELECT count(duration_us), max(duration_us), percentile(duration_us, 99) \
                     FROM kv WHERE time >= 100000000000 AND time <= 110000000000 GROUP BY op";

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| {
            v.parse().unwrap_or_else(|_| panic!("{name} {v}: a number"))
        })
}

fn form(q: &[u8]) -> String {
    q.iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn post(q: &[u8]) -> Vec<u8> {
    let body = format!("q={}", form(q));
    format!(
        "POST /query HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends one request; the status code.
fn send(addr: &str, req: &[u8]) -> u16 {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(req).expect("send");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let head = String::from_utf8_lossy(&buf[..buf.len().min(32)]).to_string();
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let k = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

fn summary(name: &str, mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let (m, p) = (percentile(&v, 0.5), percentile(&v, 0.99));
    println!(
        "hostile-latency phase={name} queries={} median_ms={m:.3} p99_ms={p:.3}",
        v.len()
    );
    (m, p)
}

fn main() {
    let per_series = arg("--records-per-series", 500_000);
    let rounds = arg("--rounds", 10);
    let queries = arg("--queries", 50);
    let clients = arg("--hostile-clients", 1);
    let (_dir, _w, reader) = hostile::store(per_series);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let cfg = HttpConfig {
        query_threads: 1,
        ..HttpConfig::default()
    };
    let server = serve(listener, reader, cfg).expect("serve");
    let addr = server.local_addr().to_string();
    let valid = post(VALID.as_bytes());
    assert_eq!(send(&addr, &valid), 200, "the valid query");
    let hostile: Arc<Vec<Vec<u8>>> = Arc::new(
        hostile::refused()
            .into_iter()
            .map(|(_, q, _)| post(q.as_bytes()))
            .collect(),
    );
    let bytes: usize = hostile.iter().map(Vec::len).sum();
    println!(
        "hostile-latency records={} record_bytes=8 hostile_statements={} hostile_bytes_per_loop={bytes} query_threads=1 hostile_clients={clients}",
        2 * per_series,
        hostile.len()
    );
    let (mut alone, mut under) = (Vec::new(), Vec::new());
    let (mut hostile_sent, mut hostile_secs) = (0u64, 0.0);
    for _ in 0..rounds {
        for _ in 0..queries {
            let t = Instant::now();
            assert_eq!(send(&addr, &valid), 200);
            alone.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let threads: Vec<_> = (0..clients)
            .map(|c| {
                let (addr, stop, count, hostile) =
                    (addr.clone(), stop.clone(), count.clone(), hostile.clone());
                std::thread::spawn(move || {
                    let mut k = c as usize;
                    while !stop.load(Ordering::SeqCst) {
                        let status = send(&addr, &hostile[k % hostile.len()]);
                        assert_eq!(status, 400, "hostile statement {}", k % hostile.len());
                        count.fetch_add(1, Ordering::SeqCst);
                        k += 1;
                    }
                })
            })
            .collect();
        // Let the hostile clients get going before timing.
        std::thread::sleep(Duration::from_millis(50));
        for _ in 0..queries {
            let t = Instant::now();
            assert_eq!(send(&addr, &valid), 200);
            under.push(t.elapsed().as_secs_f64() * 1e3);
        }
        stop.store(true, Ordering::SeqCst);
        for t in threads {
            t.join().expect("a hostile client got other than 400");
        }
        hostile_sent += count.load(Ordering::SeqCst);
        hostile_secs += started.elapsed().as_secs_f64();
    }
    let (m0, p0) = summary("alone", alone);
    let (m1, p1) = summary("hostile", under);
    println!(
        "hostile-latency hostile_requests={hostile_sent} hostile_per_s={:.0} (all answered 400)",
        hostile_sent as f64 / hostile_secs
    );
    println!(
        "hostile-latency ratio median={:.2} p99={:.2} (target <= 2)",
        m1 / m0,
        p1 / p0
    );
    server.stop();
}
