//! Compressed chunks answer exactly: stores of every field type, string
//! fields, values outside the range index's bins, single-record chunks,
//! chunks of one repeated value and random bytes that do not compress are
//! read back from disk (decoded frames) and compared with brute force.

mod common;

use common::small_config;
use loom::{Aggregate, FieldDef, FieldType, IndexDef, IndexMode, SourceId, SourceSchema};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const ID: SourceId = SourceId(0xc0de);
/// Fixed part of the records: every numeric type and a string descriptor.
const FIXED: usize = 1 + 2 + 4 + 8 + 8 + 8 + 8;
const INDEX_AT: usize = 7;

fn schema() -> SourceSchema {
    let f = |name: &str, offset: usize, ty| FieldDef {
        name: name.to_string().into(),
        offset: offset as u32,
        ty,
    };
    SourceSchema {
        measurement: "shapes".into(),
        tags: vec![],
        fields: vec![
            f("a_u8", 0, FieldType::U8),
            f("b_u16", 1, FieldType::U16),
            f("c_u32", 3, FieldType::U32),
            f("d_u64", INDEX_AT, FieldType::U64),
            f("e_i64", 15, FieldType::I64),
            f("f_f64", 23, FieldType::F64),
            f("g_str", 31, FieldType::String),
        ],
        index: Some(IndexDef {
            field: "d_u64".into(),
            min: 100,
            interval: 25,
            n_bins: 8,
        }),
    }
}

fn value(b: &[u8]) -> u64 {
    b.get(INDEX_AT..INDEX_AT + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// How the records of a case look.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Telemetry-like: few thread ids, growing times, small latencies, a
    /// short string from a few choices.
    Regular,
    /// Every record the same bytes.
    Repeated,
    /// Random bytes of random lengths (the fixed part included): nothing
    /// to compress.
    Random,
    /// Extreme values: 0, maxima, negative, NaN, values far outside the
    /// bins, long strings.
    Extremes,
}

fn record(shape: Shape, i: u64, rng: &mut rand::rngs::StdRng) -> Vec<u8> {
    let mut b = loom::RecordBuilder::new();
    b.start(FIXED);
    let (a, s, c, d, e, f, text): (u8, u16, u32, u64, i64, f64, String) = match shape {
        Shape::Regular => (
            (i % 3) as u8,
            7,
            1000 + (i % 4) as u32,
            90 + rng.gen_range(0..250),
            -(i as i64),
            i as f64 * 0.5,
            format!("op{}", i % 5),
        ),
        Shape::Repeated => (1, 2, 3, 150, -4, 5.5, "same".into()),
        Shape::Random => {
            let len = rng.gen_range(0..200);
            return (0..len).map(|_| rng.gen::<u8>()).collect();
        }
        Shape::Extremes => {
            let pick = |k: u64| [0, 1, u64::MAX, u64::MAX / 3, 99, 100, 299, 300][(k % 8) as usize];
            (
                u8::MAX,
                u16::MAX,
                u32::MAX - (i % 2) as u32,
                pick(i * 7 + rng.gen_range(0..3)),
                i64::MIN + i as i64,
                if i.is_multiple_of(2) {
                    f64::NAN
                } else {
                    -f64::MAX
                },
                "x".repeat(rng.gen_range(0..300)),
            )
        }
    };
    b.u8(0, a);
    b.bytes_mut_for_test(1, &s.to_le_bytes());
    b.u32(3, c);
    b.u64(INDEX_AT as u32, d);
    b.i64(15, e);
    b.f64(23, f);
    b.str(31, &text);
    b.bytes().to_vec()
}

/// Helper: RecordBuilder has no u16 setter; write the bytes in place.
trait PutBytes {
    fn bytes_mut_for_test(&mut self, offset: u32, v: &[u8]);
}

impl PutBytes for loom::RecordBuilder {
    fn bytes_mut_for_test(&mut self, offset: u32, v: &[u8]) {
        for (k, x) in v.iter().enumerate() {
            self.u8(offset + k as u32, *x);
        }
    }
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Regular),
        Just(Shape::Repeated),
        Just(Shape::Random),
        Just(Shape::Extremes),
    ]
}

type Records = Vec<(u64, Vec<u8>)>;

/// Opens `dir` again (every chunk then comes from disk) and compares
/// scans, aggregates, percentiles and range counts with brute force.
fn check_reopened(dir: &std::path::Path, want: &Records, seed: u64) -> Result<(), TestCaseError> {
    let r = loom::open_read_only(dir).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut got = Vec::new();
    r.scan(ID, 0, u64::MAX, |t, b| got.push((t, b.to_vec())))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(got.len(), want.len());
    prop_assert!(got == *want, "records differ after reopening");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (first, last) = (want[0].0, want[want.len() - 1].0);
    for _ in 0..6 {
        let t0 = rng.gen_range(first..=last);
        let t1 = rng.gen_range(t0..=last);
        let mut agg = Aggregate::default();
        let mut values: Vec<u64> = Vec::new();
        for (_, b) in want.iter().filter(|(t, _)| (t0..=t1).contains(t)) {
            agg.add(value(b));
            values.push(value(b));
        }
        let q = r
            .aggregate(ID, t0, t1)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(q, agg);
        values.sort_unstable();
        let k = loom::nearest_rank(0.9, values.len() as u64) as usize;
        let p = r
            .percentile(ID, t0, t1, 0.9)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(p, values.get(k.wrapping_sub(1)).copied());
        let (lo, hi) = (120, 1 << 40);
        let n = values.iter().filter(|v| (lo..=hi).contains(*v)).count() as u64;
        for mode in [IndexMode::NoIndex, IndexMode::TimeRange] {
            let c = r
                .count_matching(ID, t0, t1, lo, hi, mode)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(c.count, n, "{:?}", mode);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Any shape, any timestamp gaps, chunks sealed by size or after every
    /// record (single-record chunks): read back from compressed frames
    /// exactly, with the fallback to storing raw counted.
    #[test]
    fn compressed_stores_answer_exactly(
        shape in shape(),
        n in 1usize..1500,
        persist_every in prop_oneof![Just(1usize), Just(13), Just(usize::MAX)],
        gaps in prop_oneof![Just(0u64), Just(3), Just(1 << 40)],
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir()?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut want: Records = Vec::new();
        let mut t = rng.gen_range(0..1u64 << 50);
        {
            // Always compress: the test checks what compression gives. A
            // persist seals every open chunk (no sealing by age), so chunks
            // are sealed by size or at each persist, as this test means.
            let cfg = loom::Config {
                store_raw_when_queued: usize::MAX,
                seal_after_us: None,
                ..small_config()
            };
            let (mut w, _r) = loom::open(dir.path(), cfg)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let h = w.declare(ID, schema()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            for i in 0..n {
                t += if gaps == 0 { 0 } else { rng.gen_range(0..=gaps) };
                let b = record(shape, i as u64, &mut rng);
                w.push(h, t, &b).map_err(|e| TestCaseError::fail(e.to_string()))?;
                want.push((t, b));
                if i % persist_every == persist_every - 1 {
                    w.persist().map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
            }
            w.persist().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let st = w.stats();
            prop_assert_eq!(st.chunks_written, st.chunks, "every sealed chunk is on disk");
            prop_assert!(st.chunks_stored_raw <= st.chunks_written);
            prop_assert!(st.frame_bytes_written > 0);
            if matches!(shape, Shape::Repeated) && n >= 1000 && persist_every == usize::MAX {
                prop_assert!(
                    // 512-byte chunks: the 72-byte frame header weighs.
                    st.frame_bytes_written * 3 < st.chunk_bytes_written * 2,
                    "repeated records compress: {} of {} bytes", st.frame_bytes_written, st.chunk_bytes_written
                );
            }
            w.close().map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        check_reopened(dir.path(), &want, seed)?;
    }
}

/// With compression off, or when the flusher stores chunks raw to keep up
/// with ingest, every chunk is stored raw (in frames), the fallback is
/// counted, and the answers are the same.
#[test]
fn compression_off_stores_raw_and_counts_it() -> Result<(), Box<dyn std::error::Error>> {
    let off = loom::Config {
        compression_level: None,
        ..small_config()
    };
    stores_raw(off, false)?;
    let hurried = loom::Config {
        store_raw_when_queued: 0,
        ..small_config()
    };
    stores_raw(hurried, true)
}

fn stores_raw(cfg: loom::Config, to_keep_up: bool) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut want: Records = Vec::new();
    {
        let (mut w, _r) = loom::open(dir.path(), cfg)?;
        let h = w.declare(ID, schema())?;
        for i in 0..2000u64 {
            let b = record(Shape::Regular, i, &mut rng);
            w.push(h, 1_000 + i, &b)?;
            want.push((1_000 + i, b));
        }
        w.persist()?;
        let st = w.stats();
        assert!(st.chunks_written > 10);
        assert_eq!(st.chunks_stored_raw, st.chunks_written);
        let keep_up = if to_keep_up { st.chunks_written } else { 0 };
        assert_eq!(st.chunks_raw_to_keep_up, keep_up);
        w.close()?;
    }
    check_reopened(dir.path(), &want, 1).map_err(|e| e.to_string())?;
    Ok(())
}

/// The application's ingest queue filling up (`Writer::set_ingest_backlog`)
/// makes the flusher compress chunks at the catch-up level from 25 %,
/// counted, full or not (it never stores them raw: only the flusher's own
/// queue does), and not once it drains; the answers are the same whatever
/// level each chunk was compressed at.
#[test]
fn ingest_backlog_makes_the_flusher_yield() -> Result<(), Box<dyn std::error::Error>> {
    let cfg = loom::Config {
        // Only the flusher's own queue may make it store raw: never here.
        store_raw_when_queued: usize::MAX,
        ..small_config()
    };
    let dir = tempfile::tempdir()?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut want: Records = Vec::new();
    {
        let (mut w, _r) = loom::open(dir.path(), cfg)?;
        let h = w.declare(ID, schema())?;
        let mut t = 1_000u64;
        let mut phase = |w: &mut loom::Writer,
                         backlog: u8|
         -> Result<loom::WriterStats, Box<dyn std::error::Error>> {
            w.set_ingest_backlog(backlog);
            let before = w.stats();
            for _ in 0..2000 {
                let b = record(Shape::Regular, t, &mut rng);
                w.push(h, t, &b)?;
                want.push((t, b));
                t += 1;
            }
            w.persist()?;
            let st = w.stats();
            Ok(loom::WriterStats {
                chunks_written: st.chunks_written - before.chunks_written,
                chunks_raw_to_keep_up: st.chunks_raw_to_keep_up - before.chunks_raw_to_keep_up,
                chunks_fast_to_keep_up: st.chunks_fast_to_keep_up - before.chunks_fast_to_keep_up,
                ..st
            })
        };
        let full = phase(&mut w, 100)?;
        assert!(full.chunks_written > 10);
        assert_eq!(full.chunks_raw_to_keep_up, 0);
        assert_eq!(full.chunks_fast_to_keep_up, full.chunks_written);
        let busy = phase(&mut w, 30)?;
        assert!(busy.chunks_written > 10);
        assert_eq!(busy.chunks_raw_to_keep_up, 0);
        assert_eq!(busy.chunks_fast_to_keep_up, busy.chunks_written);
        let idle = phase(&mut w, 0)?;
        assert!(idle.chunks_written > 10);
        assert_eq!(idle.chunks_raw_to_keep_up, 0);
        w.close()?;
    }
    check_reopened(dir.path(), &want, 1).map_err(|e| e.to_string())?;
    Ok(())
}
