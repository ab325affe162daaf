//! How a percentile per aligned bucket is answered on a store: per
//! bucket, the value and the chunks decoded to find it
//! (`loom::rank_chunks_decoded`). `cargo run --release --example
//! rank_probe -- <store> <source id> <t0 µs> <bucket µs> <buckets> [q]`.

use std::time::Instant;

use loom::SourceId;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).ok_or(format!("argument {i} missing"));
    let r = loom::open_read_only(std::path::Path::new(arg(1)?))?;
    let id = SourceId(arg(2)?.parse()?);
    let t0: u64 = arg(3)?.parse()?;
    let width: u64 = arg(4)?.parse()?;
    let n: u64 = arg(5)?.parse()?;
    let q: f64 = args.get(6).map(|s| s.parse()).transpose()?.unwrap_or(0.99);
    let snap = r.snapshot();
    let (mut decoded, start) = (0, Instant::now());
    for k in 0..n {
        let (a, b) = (t0 + k * width, t0 + (k + 1) * width - 1);
        let before = loom::rank_chunks_decoded();
        let t = Instant::now();
        let w = snap.window_many(&[id], a, b, loom::Extremes::NONE)?;
        let gathered = t.elapsed();
        let p = w.percentile(q)?;
        let d = loom::rank_chunks_decoded() - before;
        decoded += d;
        println!(
            "bucket {k} [{a}, {b}] n {} p {p:?} decoded {d} gather {:.2} ms rank {:.2} ms",
            w.count(),
            gathered.as_secs_f64() * 1e3,
            (t.elapsed() - gathered).as_secs_f64() * 1e3
        );
    }
    println!(
        "{n} buckets: {decoded} chunks decoded, {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
