//! A store declared by schema (two sources, a range index on a field) and
//! the questions asked of it, shared by the durability and index-paging
//! tests.

use std::path::Path;

use loom::{Config, IndexMode, Reader, SourceId, SourceSchema};

use super::{record, Model};

/// The schema of source `op`: a u64 `value` at offset 0, range-indexed.
pub fn schema(op: &str) -> SourceSchema {
    super::indexed_schema("test", ("op", op), (100, 50, 20))
}

/// Heavy-tailed values, several records per µs.
pub fn value(i: u64) -> u64 {
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    if h.is_multiple_of(97) {
        3000 + h % 5000
    } else {
        h % 1400
    }
}

pub fn fill(
    dir: &Path,
    cfg: Config,
    from: u64,
    n: u64,
    model: &mut Model,
) -> Result<loom::Writer, Box<dyn std::error::Error>> {
    let (mut w, _r) = loom::open(dir, cfg)?;
    let hs = [
        w.declare(SourceId(1), schema("read"))?,
        w.declare(SourceId(2), schema("write"))?,
    ];
    for i in from..from + n {
        let s = (i % 3 == 0) as usize;
        let b = record(value(i), (i % 9) as usize);
        w.push(hs[s], i / 2, &b)?;
        model.records.push((SourceId(1 + s as u64), i / 2, b));
    }
    Ok(w)
}

/// Every question the engine answers, over windows on disk, in memory,
/// across both and beyond, compared with brute force.
pub fn check_answers(r: &Reader, model: &Model) -> Result<(), Box<dyn std::error::Error>> {
    let end = model.max_ts();
    let windows = [
        (0, end),
        (end / 7, end / 3),
        (end / 2, end + 10),
        (end + 5, end + 9),
    ];
    for id in [SourceId(1), SourceId(2)] {
        for &(t0, t1) in &windows {
            assert_eq!(r.aggregate(id, t0, t1)?, model.aggregate(id, t0, t1));
            assert_eq!(
                r.count(id, t0, t1)?,
                model.window(id, t0, t1).count() as u64
            );
            for q in [0.5, 0.99, 0.9999] {
                assert_eq!(
                    r.percentile(id, t0, t1, q)?,
                    model.percentile(id, t0, t1, q)
                );
            }
            let mut got = Vec::new();
            r.range_scan(id, t0, t1, 700, 4000, |t, v, b| {
                got.push((t, v, b.to_vec()))
            })?;
            assert_eq!(got, model.range(id, t0, t1, 700, 4000));
            let want = model.range(id, t0, t1, 1000, u64::MAX).len() as u64;
            for mode in [
                IndexMode::NoIndex,
                IndexMode::TimeOnly,
                IndexMode::RangeOnly,
                IndexMode::TimeRange,
            ] {
                assert_eq!(
                    r.count_matching(id, t0, t1, 1000, u64::MAX, mode)?.count,
                    want
                );
            }
        }
    }
    Ok(())
}
