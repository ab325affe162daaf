//! Synthetic recordings shaped like the RocksDB or Valkey workload's phases.
//!
//! RocksDB (`--workload rocksdb`):
//! - **P1**: application KV ops only, 90 % reads and 10 % writes.
//! - **P2**: P1 plus syscall records: per KV op on average 0.8 `pread64` (nr 17),
//!   0.3 `write` (1), 0.2 `futex` (202), 0.05 `fsync` (74) and 0.1 `read` (0).
//! - **P3**: P2 plus page-cache insertions, 0.3 per KV op on average.
//!
//! Valkey (`--workload valkey`), shaped like a live valkey-workload run on loopback:
//! - **P1**: requests, 50 % reads and 50 % updates (YCSB A), ~30 µs median.
//! - **P2**: P1 plus the server's syscalls: per request 1 `read` (0), 1
//!   `write` (1, the reply) and 0.4 `epoll_wait` (232).
//! - **P3**: P2 plus 2 packets per request (request to port 6379 and reply).
//!
//! `rate` is KV ops per second; other kinds scale with it as above.
//! Latencies are heavy tailed: a lognormal body with a Pareto tail (scale 4x
//! the median, shape 1.3) taken with probability 0.03 %, plus a few *slow bursts* (about one per 30 s, or three per recording when shorter than 90 s; each
//! 100–300 ms long) during which latencies are multiplied by 8. Everything is
//! drawn from [`SplitMix64`] seeded by `seed`, so the same parameters give the
//! same bytes.
//!
//! Time: batches are emitted every `tick_us` (chosen so a batch holds about
//! `batch_size` records); a batch's arrival time is the end of its tick, in µs
//! since the recording start, and its records' start timestamps lie inside the
//! tick in non-decreasing order, so each source's timestamps never go back.

use std::path::Path;

use telemetry::{
    Batch, KvOp, KvOpKind, Packet, PageCache, Record, RecordingError, RecordingHeader,
    RecordingWriter, Syscall,
};

use crate::rng::SplitMix64;

/// Phase of the RocksDB workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// KV op records only.
    P1,
    /// KV ops and syscalls.
    P2,
    /// KV ops, syscalls and page-cache events.
    P3,
}

impl Phase {
    /// `p1`, `p2` or `p3`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::P1 => "p1",
            Phase::P2 => "p2",
            Phase::P3 => "p3",
        }
    }
}

/// Workload whose shape the generator imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// The RocksDB key-value workload.
    Rocksdb,
    /// The Valkey server workload.
    Valkey,
}

impl Workload {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Rocksdb => "rocksdb",
            Workload::Valkey => "valkey",
        }
    }

    fn shape(self) -> &'static Shape {
        match self {
            Workload::Rocksdb => &ROCKSDB,
            Workload::Valkey => &VALKEY,
        }
    }
}

/// What the P3 phase adds to P2.
enum P3Extra {
    /// Page-cache insertions, this many per KV op on average.
    PageCache(f64),
    /// Packets to and from `server_port`, this many per KV op.
    Packets { per_op: f64, server_port: u16 },
}

/// The statistical shape of a workload's records.
struct Shape {
    read_fraction: f64,
    /// (median µs, sigma) of reads and of writes.
    read_latency: (f64, f64),
    write_latency: (f64, f64),
    /// Syscalls emitted in P2/P3: (number, mean count per KV op, median µs, sigma).
    syscalls: &'static [(u32, f64, f64, f64)],
    p3: P3Extra,
}

const ROCKSDB: Shape = Shape {
    read_fraction: READ_FRACTION,
    read_latency: (8.0, 0.45),
    write_latency: (15.0, 0.5),
    syscalls: &SYSCALLS,
    p3: P3Extra::PageCache(PAGE_CACHE_PER_OP),
};

const VALKEY: Shape = Shape {
    read_fraction: 0.5,
    read_latency: (30.0, 0.5),
    write_latency: (32.0, 0.5),
    syscalls: &[
        (0, 1.0, 2.0, 0.5),
        (1, 1.0, 6.0, 0.6),
        (232, 0.4, 20.0, 1.0),
    ],
    p3: P3Extra::Packets {
        per_op: 2.0,
        server_port: 6379,
    },
};

/// Generator parameters.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Workload imitated.
    pub workload: Workload,
    /// Phase imitated.
    pub phase: Phase,
    /// Length of the recording in seconds (of arrival time).
    pub duration_s: f64,
    /// KV ops per second.
    pub rate: f64,
    /// Approximate records per batch.
    pub batch_size: usize,
    /// Seed of the random generator.
    pub seed: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            workload: Workload::Rocksdb,
            phase: Phase::P1,
            duration_s: 10.0,
            rate: 10_000.0,
            batch_size: 256,
            seed: 1,
        }
    }
}

/// What was generated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenSummary {
    /// Batches written.
    pub batches: u64,
    /// Records written.
    pub records: u64,
    /// Slow bursts placed, as `(start_us, end_us)`.
    pub bursts: Vec<(u64, u64)>,
}

/// Syscalls emitted in P2/P3: (number, mean count per KV op, median µs, sigma).
const SYSCALLS: [(u32, f64, f64, f64); 5] = [
    (Syscall::PREAD64, 0.8, 6.0, 0.7),
    (1, 0.3, 4.0, 0.6),
    (202, 0.2, 3.0, 1.0),
    (74, 0.05, 400.0, 0.8),
    (0, 0.1, 2.0, 0.5),
];
const PAGE_CACHE_PER_OP: f64 = 0.3;
const READ_FRACTION: f64 = 0.9;
const TAIL_PROBABILITY: f64 = 0.0003;
const BURST_FACTOR: f64 = 8.0;
const MEAN_BURST_GAP_S: f64 = 30.0;
const MAX_LATENCY_US: f64 = 2_000_000.0;
const THREADS: u32 = 8;
const PID: u32 = 4242;

struct Gen {
    rng: SplitMix64,
    phase: Phase,
    shape: &'static Shape,
    bursts: Vec<(u64, u64)>,
}

impl Gen {
    fn in_burst(&self, t: u64) -> bool {
        self.bursts.iter().any(|&(a, b)| t >= a && t < b)
    }

    /// Heavy-tailed latency in µs: lognormal body, Pareto tail, burst factor.
    fn latency(&mut self, t: u64, median: f64, sigma: f64) -> u64 {
        let mut v = if self.rng.chance(TAIL_PROBABILITY) {
            self.rng.pareto(median * 4.0, 1.3)
        } else {
            self.rng.lognormal(median, sigma)
        };
        if self.in_burst(t) {
            v *= BURST_FACTOR;
        }
        v.clamp(1.0, MAX_LATENCY_US) as u64
    }

    /// Number of events in a tick for a mean of `mean` (integer part plus a
    /// Bernoulli draw for the fraction).
    fn count(&mut self, mean: f64) -> u64 {
        let base = mean.floor();
        base as u64 + u64::from(self.rng.chance(mean - base))
    }

    fn tick(&mut self, t0: u64, tick_us: u64, kv_per_tick: f64, out: &mut Vec<Record>) {
        out.clear();
        let n_kv = self.count(kv_per_tick);
        let mut starts: Vec<u64> = (0..n_kv).map(|_| t0 + self.rng.below(tick_us)).collect();
        starts.sort_unstable();
        for s in starts {
            let read = self.rng.chance(self.shape.read_fraction);
            let (op, (median, sigma)) = if read {
                (KvOpKind::Read, self.shape.read_latency)
            } else {
                (KvOpKind::Write, self.shape.write_latency)
            };
            let duration_us = self.latency(s, median, sigma);
            out.push(Record::KvOp(KvOp {
                thread_id: 1 + self.rng.below(u64::from(THREADS)) as u32,
                op,
                start_us: s,
                duration_us,
            }));
        }
        if self.phase != Phase::P1 {
            for &(nr, per_op, median, sigma) in self.shape.syscalls {
                let n = self.count(kv_per_tick * per_op);
                let mut starts: Vec<u64> = (0..n).map(|_| t0 + self.rng.below(tick_us)).collect();
                starts.sort_unstable();
                for s in starts {
                    let duration_us = self.latency(s, median, sigma);
                    let tid = PID + 1 + self.rng.below(u64::from(THREADS)) as u32;
                    out.push(Record::Syscall(Syscall {
                        pid: PID,
                        tid,
                        nr,
                        start_us: s,
                        duration_us,
                    }));
                }
            }
        }
        if self.phase != Phase::P3 {
            return;
        }
        match self.shape.p3 {
            P3Extra::PageCache(per_op) => self.page_cache(t0, tick_us, kv_per_tick * per_op, out),
            P3Extra::Packets {
                per_op,
                server_port,
            } => self.packets(t0, tick_us, kv_per_tick * per_op, server_port, out),
        }
    }

    fn packets(&mut self, t0: u64, tick_us: u64, mean: f64, port: u16, out: &mut Vec<Record>) {
        let n = self.count(mean);
        let mut ts: Vec<u64> = (0..n).map(|_| t0 + self.rng.below(tick_us)).collect();
        ts.sort_unstable();
        let lo = std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets();
        for t in ts {
            let client = 40_000 + self.rng.below(u64::from(THREADS)) as u16;
            let to_server = self.rng.chance(0.5);
            let (src_port, dst_port) = if to_server {
                (client, port)
            } else {
                (port, client)
            };
            out.push(Record::Packet(Packet {
                src_addr: lo,
                dst_addr: lo,
                src_port,
                dst_port,
                length: 66 + self.rng.below(140) as u32,
                timestamp_us: t,
            }));
        }
    }

    fn page_cache(&mut self, t0: u64, tick_us: u64, mean: f64, out: &mut Vec<Record>) {
        let n = self.count(mean);
        let mut ts: Vec<u64> = (0..n).map(|_| t0 + self.rng.below(tick_us)).collect();
        ts.sort_unstable();
        for t in ts {
            let inode = 1000 + self.rng.below(64);
            out.push(Record::PageCache(PageCache {
                pid: PID,
                tid: PID + 1 + self.rng.below(u64::from(THREADS)) as u32,
                timestamp_us: t,
                pfn: self.rng.below(1 << 24),
                inode,
                index: self.rng.below(1 << 18),
                device: 0x0803,
            }));
        }
    }
}

/// Mean records per KV op in a phase.
fn records_per_op(shape: &Shape, phase: Phase) -> f64 {
    let sys: f64 = shape.syscalls.iter().map(|s| s.1).sum();
    let extra = match shape.p3 {
        P3Extra::PageCache(per_op) | P3Extra::Packets { per_op, .. } => per_op,
    };
    match phase {
        Phase::P1 => 1.0,
        Phase::P2 => 1.0 + sys,
        Phase::P3 => 1.0 + sys + extra,
    }
}

/// The header a generated recording carries (synthetic = true).
pub fn header(cfg: &GenConfig) -> RecordingHeader {
    RecordingHeader {
        workload: cfg.workload.name().to_string(),
        phase: cfg.phase.name().to_string(),
        synthetic: true,
        description: format!(
            "SYNTHETIC recording generated by `replay gen` (not captured from a live run): \
             workload={} phase={} duration_s={} rate={} kv_ops/s batch_size={} seed={}",
            cfg.workload.name(),
            cfg.phase.name(),
            cfg.duration_s,
            cfg.rate,
            cfg.batch_size,
            cfg.seed
        ),
    }
}

/// Generates batches, handing each to `sink` in arrival order.
pub fn generate<E>(
    cfg: &GenConfig,
    mut sink: impl FnMut(&Batch) -> Result<(), E>,
) -> Result<GenSummary, E> {
    let duration_us = (cfg.duration_s.max(0.0) * 1e6) as u64;
    let rate = cfg.rate.max(0.0);
    let per_op = records_per_op(cfg.workload.shape(), cfg.phase);
    let records_per_s = rate * per_op;
    let tick_us = if records_per_s > 0.0 {
        ((cfg.batch_size.max(1) as f64 / records_per_s) * 1e6).clamp(100.0, 1_000_000.0) as u64
    } else {
        1_000_000
    };
    let kv_per_tick = rate * tick_us as f64 / 1e6;
    let mut rng = SplitMix64::new(cfg.seed);
    // Place slow bursts first so they do not depend on the data drawn later.
    let mut bursts = Vec::new();
    let mut t = 0f64;
    // Short recordings still get a few bursts.
    let gap_s = MEAN_BURST_GAP_S.min(cfg.duration_s.max(0.0) / 3.0).max(1.0);
    loop {
        t += gap_s * 1e6 * (0.5 + rng.uniform());
        let start = t as u64;
        if start >= duration_us {
            break;
        }
        let len = 100_000 + rng.below(200_000);
        bursts.push((start, start + len));
    }
    let mut g = Gen {
        rng,
        phase: cfg.phase,
        shape: cfg.workload.shape(),
        bursts,
    };
    let mut summary = GenSummary::default();
    let mut batch = Batch::default();
    let mut t0 = 0u64;
    while t0 < duration_us {
        let tick = tick_us.min(duration_us - t0);
        let mut records = std::mem::take(&mut batch.records);
        g.tick(
            t0,
            tick,
            kv_per_tick * tick as f64 / tick_us as f64,
            &mut records,
        );
        batch.records = records;
        batch.arrival_us = t0 + tick;
        if !batch.records.is_empty() {
            sink(&batch)?;
            summary.batches += 1;
            summary.records += batch.records.len() as u64;
        }
        t0 += tick;
    }
    summary.bursts = g.bursts;
    Ok(summary)
}

/// Generates a recording file at `path`.
pub fn generate_file(cfg: &GenConfig, path: &Path) -> Result<GenSummary, RecordingError> {
    let mut w = RecordingWriter::create(path, &header(cfg))?;
    let summary = generate(cfg, |b| w.write_batch(b))?;
    w.finish()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(cfg: &GenConfig) -> (Vec<Batch>, GenSummary) {
        let mut v = Vec::new();
        let s = generate::<()>(cfg, |b| {
            v.push(b.clone());
            Ok(())
        })
        .unwrap();
        (v, s)
    }

    #[test]
    fn phases_have_their_kinds_and_are_deterministic() {
        for phase in [Phase::P1, Phase::P2, Phase::P3] {
            let cfg = GenConfig {
                phase,
                duration_s: 2.0,
                rate: 5000.0,
                ..GenConfig::default()
            };
            let (a, sa) = collect(&cfg);
            let (b, _) = collect(&cfg);
            assert_eq!(a, b);
            let recs: Vec<&Record> = a.iter().flat_map(|b| &b.records).collect();
            let kv = recs.iter().filter(|r| matches!(r, Record::KvOp(_))).count();
            let reads = recs
                .iter()
                .filter(|r| matches!(r, Record::KvOp(k) if k.op == KvOpKind::Read))
                .count();
            assert!((9000..11000).contains(&kv), "kv {kv}");
            assert!((reads as f64 / kv as f64 - 0.9).abs() < 0.02);
            let sys = recs
                .iter()
                .filter(|r| matches!(r, Record::Syscall(_)))
                .count();
            let pread = recs
                .iter()
                .filter(|r| matches!(r, Record::Syscall(s) if s.nr == 17))
                .count();
            let pc = recs
                .iter()
                .filter(|r| matches!(r, Record::PageCache(_)))
                .count();
            assert_eq!(sys > 0, phase != Phase::P1);
            assert_eq!(pread > 0, phase != Phase::P1);
            assert_eq!(pc > 0, phase == Phase::P3);
            assert_eq!(sa.records as usize, recs.len());
            // Batches of a few hundred records, arrival non-decreasing, and
            // per-source timestamps non-decreasing.
            let mut last = std::collections::HashMap::new();
            let mut prev_arrival = 0;
            for b in &a {
                assert!(b.arrival_us >= prev_arrival);
                prev_arrival = b.arrival_us;
                assert!(b.records.len() < 1000);
                for r in &b.records {
                    let e = last.entry(r.source_id()).or_insert(0);
                    assert!(r.timestamp_us() >= *e);
                    *e = r.timestamp_us();
                    assert!(r.timestamp_us() < b.arrival_us);
                }
            }
        }
    }

    #[test]
    fn different_seeds_differ() {
        let a = collect(&GenConfig {
            duration_s: 0.5,
            ..GenConfig::default()
        });
        let b = collect(&GenConfig {
            duration_s: 0.5,
            seed: 2,
            ..GenConfig::default()
        });
        assert_ne!(a.0, b.0);
    }
}

#[cfg(test)]
mod valkey_tests {
    use super::*;

    #[test]
    fn valkey_phases_have_their_kinds() {
        for phase in [Phase::P1, Phase::P2, Phase::P3] {
            let cfg = GenConfig {
                workload: Workload::Valkey,
                phase,
                duration_s: 2.0,
                rate: 5000.0,
                ..GenConfig::default()
            };
            let mut recs = Vec::new();
            generate::<()>(&cfg, |b| {
                recs.extend_from_slice(&b.records);
                Ok(())
            })
            .unwrap();
            let kv = recs.iter().filter(|r| matches!(r, Record::KvOp(_))).count();
            let reads = recs
                .iter()
                .filter(|r| matches!(r, Record::KvOp(k) if k.op == KvOpKind::Read))
                .count();
            assert!((9000..11000).contains(&kv), "kv {kv}");
            assert!((reads as f64 / kv as f64 - 0.5).abs() < 0.03);
            let writes = recs
                .iter()
                .filter(|r| matches!(r, Record::Syscall(s) if s.nr == 1))
                .count();
            let packets: Vec<&Packet> = recs
                .iter()
                .filter_map(|r| match r {
                    Record::Packet(p) => Some(p),
                    _ => None,
                })
                .collect();
            assert_eq!(writes > 0, phase != Phase::P1);
            assert_eq!(!packets.is_empty(), phase == Phase::P3);
            assert!(packets
                .iter()
                .all(|p| p.src_port == 6379 || p.dst_port == 6379));
            assert!(!recs.iter().any(|r| matches!(r, Record::PageCache(_))));
        }
    }
}
