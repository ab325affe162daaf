//! Valid inputs made by the real encoders, which the mutator starts from so
//! mutated inputs get past magic numbers and lengths into the decoders.

use anyhow::{Context, Result};
use loom::SourceId;
use telemetry::wire::encode_frame;
use telemetry::{
    Batch, KvOp, KvOpKind, Packet, PageCache, Record, RecordingHeader, RecordingWriter, Syscall,
};

use replay::SplitMix64;

/// A random record of a random kind.
pub fn record(rng: &mut SplitMix64) -> Record {
    let small = |rng: &mut SplitMix64| rng.next_u64() % 100_000;
    match rng.index(4) {
        0 => Record::KvOp(KvOp {
            thread_id: rng.next_u64() as u32,
            op: if rng.one_in(2) {
                KvOpKind::Read
            } else {
                KvOpKind::Write
            },
            start_us: small(rng),
            duration_us: small(rng),
        }),
        1 => Record::Syscall(Syscall {
            pid: rng.next_u64() as u32,
            tid: rng.next_u64() as u32,
            nr: rng.index(450) as u32,
            start_us: small(rng),
            duration_us: small(rng),
        }),
        2 => Record::PageCache(PageCache {
            pid: rng.next_u64() as u32,
            tid: rng.next_u64() as u32,
            timestamp_us: small(rng),
            pfn: rng.next_u64(),
            inode: rng.next_u64(),
            index: small(rng),
            device: rng.next_u64() as u32,
        }),
        _ => {
            let mut src_addr = [0u8; 16];
            let mut dst_addr = [0u8; 16];
            src_addr.copy_from_slice(&rng.bytes(16));
            dst_addr.copy_from_slice(&rng.bytes(16));
            Record::Packet(Packet {
                src_addr,
                dst_addr,
                src_port: rng.next_u64() as u16,
                dst_port: rng.next_u64() as u16,
                length: rng.index(9000) as u32,
                timestamp_us: small(rng),
            })
        }
    }
}

/// A batch of `0..max` random records.
pub fn batch(rng: &mut SplitMix64, max: usize) -> Batch {
    let n = rng.index(max + 1);
    Batch::new(
        rng.next_u64() % 1_000_000,
        (0..n).map(|_| record(rng)).collect(),
    )
}

/// `record_decode` inputs: the record count byte, then the batch payload.
pub fn payloads(rng: &mut SplitMix64, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let b = batch(rng, 40);
            let mut out = vec![b.records.len() as u8];
            b.encode_payload_into(&mut out);
            out
        })
        .collect()
}

/// `wire_frame` inputs: one to four frames back to back.
pub fn frames(rng: &mut SplitMix64, n: usize) -> Result<Vec<Vec<u8>>> {
    (0..n)
        .map(|_| {
            let mut out = Vec::new();
            for _ in 0..1 + rng.index(4) {
                encode_frame(&batch(rng, 30), &mut out).context("encoding a frame")?;
            }
            Ok(out)
        })
        .collect()
}

/// A recording header with short random-length texts.
pub fn recording_header(rng: &mut SplitMix64) -> RecordingHeader {
    let text = |rng: &mut SplitMix64| "x".repeat(rng.index(12));
    RecordingHeader {
        workload: text(rng),
        phase: text(rng),
        synthetic: rng.one_in(2),
        description: text(rng),
    }
}

/// `recording_file` inputs: a header and up to three batches.
pub fn recordings(rng: &mut SplitMix64, n: usize) -> Result<Vec<Vec<u8>>> {
    (0..n)
        .map(|_| {
            let mut w = RecordingWriter::new(Vec::new(), &recording_header(rng))
                .context("writing a recording header")?;
            for _ in 0..rng.index(4) {
                w.write_batch(&batch(rng, 30))
                    .context("writing a recording batch")?;
            }
            w.finish().context("finishing a recording")
        })
        .collect()
}

/// `open_segment` inputs: the first segment of small stores written through
/// the engine with `loom::fuzz::segment_config`, from a few records in one
/// block to many over several blocks, with one to three sources.
pub fn segments(rng: &mut SplitMix64, n: usize) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for i in 0..n {
        let dir = tempfile::tempdir().context("temp dir for a sample store")?;
        let (mut w, _r) = loom::open(dir.path(), loom::fuzz::segment_config())
            .context("opening a sample store")?;
        let sources = 1 + rng.index(3);
        let mut handles = Vec::new();
        for s in 0..sources {
            let spec = loom::RangeIndexSpec {
                extractor: loom::fuzz::first_u64,
                min: 0,
                interval: 64,
                n_bins: 16,
            };
            handles.push(w.declare_source(SourceId(s as u64 + 1), Some(spec))?);
        }
        // Every third sample spans blocks; the others stay small and fast.
        let records = if i % 3 == 0 {
            200 + rng.index(400)
        } else {
            1 + rng.index(40)
        };
        let mut ts = vec![0u64; sources];
        for _ in 0..records {
            let s = rng.index(sources);
            ts[s] += rng.index(3000) as u64;
            let len = [0, 1, 8, 13, 24, 48, 200][rng.index(7)];
            w.push(handles[s], ts[s], &rng.bytes(len))?;
        }
        w.close().context("closing a sample store")?;
        let seg = std::fs::read(dir.path().join(loom::fuzz::FIRST_SEGMENT))
            .context("reading a sample segment")?;
        out.push(seg);
    }
    Ok(out)
}

/// `open_journal` inputs: the journal of open chunks of small stores
/// written through the engine with `loom::fuzz::segment_config`, persisted
/// (their chunks younger than the seal age stay open and are journaled)
/// and left as a crash leaves them, one to three sources, a few records to
/// a few hundred, some persisted more than once.
pub fn journals(rng: &mut SplitMix64, n: usize) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let dir = tempfile::tempdir().context("temp dir for a sample store")?;
        let (mut w, _r) = loom::open(dir.path(), loom::fuzz::segment_config())
            .context("opening a sample store")?;
        let sources = 1 + rng.index(3);
        let handles: Vec<_> = (0..sources)
            .map(|s| w.declare_source(SourceId(s as u64 + 1), None))
            .collect::<Result<_, _>>()?;
        let mut ts = vec![0u64; sources];
        for _ in 0..1 + rng.index(3) {
            for _ in 0..1 + rng.index(60) {
                let s = rng.index(sources);
                ts[s] += rng.index(3000) as u64;
                let len = [0, 1, 8, 13, 24, 48][rng.index(6)];
                w.push(handles[s], ts[s], &rng.bytes(len))?;
            }
            w.persist().context("persisting a sample store")?;
        }
        w.simulate_crash();
        let journal = std::fs::read(dir.path().join(loom::fuzz::FIRST_JOURNAL))
            .context("reading a sample journal")?;
        out.push(journal);
    }
    Ok(out)
}
