//! `make encode-bench`: the chunk encoder's cost in thread CPU time, the
//! current one-pass encoder against the reference (pre-transpose) one,
//! side by side in one run, rounds alternated.
//!
//! Chunks are built as the writer seals them (payloads up to 64 KiB, the
//! default `chunk_size`) from: the `ingest-scaling` generator's records at
//! 8 and 64 B (the same seeds and log-normal latency table, 64 records per
//! microsecond stamp), and telemetry-shaped 24-byte KV and 28-byte syscall
//! records (smooth times, a few thread ids, small latencies). Every body is
//! decoded and compared with its payload before anything is timed.
//!
//! Usage: encode_bench [ROUNDS] [LEVEL]   (defaults 5, 3)

use loom::codec_bench::{decode, Encoders, Payload};
use rand::{Rng, RngCore, SeedableRng};

/// Payload bytes per chunk (the default `chunk_size`, 64 KiB, less its
/// 48-byte header).
const CHUNK_PAYLOAD: usize = 64 * 1024 - 48;
/// Chunks per data set (about 13 MB of payload).
const CHUNKS: usize = 200;

/// Thread CPU time in nanoseconds: the machine is shared, so wall time
/// would count the other builds.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Log-normal latencies (µs, median 50, σ 1) as `ingest-scaling` draws them.
fn latencies(n: usize) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x1a7e_0c1e);
    (0..n)
        .map(|_| {
            let u1: f64 = 1.0 - rng.gen::<f64>();
            let u2: f64 = rng.gen::<f64>();
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            (50.0 * z.exp()).max(1.0) as u64
        })
        .collect()
}

/// Cuts a stream of records into chunks of at most `CHUNK_PAYLOAD` bytes.
fn chunks(mut record: impl FnMut(u64) -> (u64, Vec<u8>)) -> Vec<Payload> {
    let mut out = Vec::new();
    let mut k = 0u64;
    while out.len() < CHUNKS {
        let mut recs = Vec::new();
        let mut size = 0;
        loop {
            let (ts, rec) = record(k);
            if size + rec.len() + 3 > CHUNK_PAYLOAD {
                break;
            }
            size += rec.len() + 3;
            recs.push((ts, rec));
            k += 1;
        }
        out.push(Payload::new(recs.iter().map(|(t, r)| (*t, &r[..]))));
    }
    out
}

/// The data sets: name and chunks.
fn data_sets() -> Vec<(&'static str, Vec<Payload>)> {
    let lat = latencies(1 << 16);
    let generator = |size: usize| {
        let mut base = vec![0u8; size];
        rand::rngs::StdRng::seed_from_u64(0x5eed_1009).fill_bytes(&mut base);
        let lat = lat.clone();
        chunks(move |k| {
            let mut b = base.clone();
            let v = lat[k as usize % lat.len()].to_le_bytes();
            let n = size.min(8);
            b[..n].copy_from_slice(&v[..n]);
            (1_000_000 + k / 64, b)
        })
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(21);
    let mut t = 1_700_000_000_000_000_000u64;
    let kv = chunks(|k| {
        t += rng.gen_range(20..400);
        let mut b = Vec::with_capacity(24);
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&((lat[k as usize % lat.len()] * 1000) as u32).to_le_bytes());
        b.extend_from_slice(&(4000 + rng.gen_range(0..8u32)).to_le_bytes());
        b.extend_from_slice(&rng.gen_range(0..3u32).to_le_bytes());
        b.extend_from_slice(&(rng.gen_range(0..200u32) * 16).to_le_bytes());
        (t / 1000, b)
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(22);
    let mut t = 1_700_000_000_000_000_000u64;
    let syscall = chunks(|k| {
        t += rng.gen_range(50..900);
        let mut b = Vec::with_capacity(28);
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&((lat[k as usize % lat.len()] * 300) as u32).to_le_bytes());
        b.extend_from_slice(&(4000 + rng.gen_range(0..8u32)).to_le_bytes());
        b.extend_from_slice(&17u32.to_le_bytes());
        b.extend_from_slice(&(rng.gen_range(0..4u32) * 4096).to_le_bytes());
        b.extend_from_slice(&(rng.gen_range(0..12u32) as i32 - 1).to_le_bytes());
        (t / 1000, b)
    });
    vec![
        ("is-8B", generator(8)),
        ("is-64B", generator(64)),
        ("kv-24B", kv),
        ("syscall-28B", syscall),
    ]
}

#[derive(Default)]
struct Tally {
    ns: u64,
    body_bytes: u64,
}

/// One timed pass of `f` over every chunk; bytes it produced.
fn timed(chunks: &[Payload], mut f: impl FnMut(&Payload) -> usize) -> Tally {
    let start = thread_cpu_ns();
    let body_bytes = chunks.iter().map(&mut f).sum::<usize>() as u64;
    Tally {
        ns: thread_cpu_ns() - start,
        body_bytes,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let level: i32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let mut enc = Encoders::new(level);
    let mut body = Vec::new();
    println!(
        "encode-bench: {rounds} rounds alternated, zstd level {level}, {CHUNKS} chunks of up to {CHUNK_PAYLOAD} B per data set; thread CPU time"
    );
    println!(
        "{:<12} {:>9} | {:>22} {:>22} {:>6} | {:>22} {:>22} {:>6} | {:>9} {:>9}",
        "data",
        "records",
        "columns old ns/r MB/s",
        "columns new ns/r MB/s",
        "speed",
        "encode old ns/r MB/s",
        "encode new ns/r MB/s",
        "speed",
        "B/rec old",
        "B/rec new"
    );
    for (name, chunks) in data_sets() {
        let records: u64 = chunks.iter().map(|c| u64::from(c.count)).sum();
        let bytes: u64 = chunks.iter().map(|c| c.bytes.len() as u64).sum();
        for c in &chunks {
            for old in [false, true] {
                body.clear();
                let codec = if old {
                    enc.reference_encode(c, &mut body)
                } else {
                    enc.encode(c, &mut body)
                };
                let back = decode(codec, &body, c);
                assert_eq!(
                    back.as_deref(),
                    Ok(&c.bytes[..]),
                    "{name}: decode (old={old})"
                );
            }
        }
        let mut t = [(); 4].map(|_| Tally::default());
        for r in 0..rounds {
            // Alternate which goes first, so neither always runs warm.
            let order: [usize; 4] = if r % 2 == 0 {
                [0, 1, 2, 3]
            } else {
                [1, 0, 3, 2]
            };
            for which in order {
                let got = match which {
                    0 => timed(&chunks, |c| enc.reference_columns(c).map_or(0, <[u8]>::len)),
                    1 => timed(&chunks, |c| enc.columns(c).map_or(0, <[u8]>::len)),
                    2 => timed(&chunks, |c| {
                        body.clear();
                        enc.reference_encode(c, &mut body);
                        body.len()
                    }),
                    _ => timed(&chunks, |c| {
                        body.clear();
                        enc.encode(c, &mut body);
                        body.len()
                    }),
                };
                t[which].ns += got.ns;
                t[which].body_bytes = got.body_bytes;
            }
        }
        let per = |x: &Tally| x.ns as f64 / (records * rounds as u64) as f64;
        let mbs = |x: &Tally| (bytes * rounds as u64) as f64 / x.ns as f64 * 1e3;
        let cell = |x: &Tally| format!("{:>9.2} {:>8.0}", per(x), mbs(x));
        println!(
            "{:<12} {:>9} | {:>22} {:>22} {:>5.2}x | {:>22} {:>22} {:>5.2}x | {:>9.3} {:>9.3}",
            name,
            records,
            cell(&t[0]),
            cell(&t[1]),
            t[0].ns as f64 / t[1].ns as f64,
            cell(&t[2]),
            cell(&t[3]),
            t[2].ns as f64 / t[3].ns as f64,
            t[2].body_bytes as f64 / records as f64,
            t[3].body_bytes as f64 / records as f64,
        );
    }
}
