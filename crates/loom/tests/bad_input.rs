//! Bad input gets a clear error and loses nothing: out-of-order timestamps,
//! oversized records, bad handles, and flipped or truncated bytes in segment
//! files.

mod common;

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

use common::{record, small_config, spec, Model};
use loom::{Error, SourceId};

fn fill(dir: &Path, n: u64) -> Result<Model, Box<dyn std::error::Error>> {
    let (mut w, _r) = loom::open(dir, small_config())?;
    let hs = [
        w.declare_source(SourceId(1), Some(spec()))?,
        w.declare_source(SourceId(2), Some(spec()))?,
    ];
    let mut model = Model::default();
    for i in 0..n {
        let s = (i % 3 == 0) as usize;
        let b = record(i * 7919 % 1500, (i % 11) as usize);
        w.push(hs[s], i, &b)?;
        model.records.push((SourceId(1 + s as u64), i, b));
    }
    w.close()?;
    Ok(model)
}

/// One compressed chunk (frame) on disk.
#[derive(Debug, Clone, Copy)]
struct Frame {
    segment: u64,
    /// Offset of the frame in its segment file.
    offset: u64,
    /// Frame bytes (72-byte header and body).
    len: u64,
    /// Records of its chunk.
    count: u64,
}

impl Frame {
    fn path(&self, dir: &Path) -> std::path::PathBuf {
        dir.join(format!("segment-{:08}.log", self.segment))
    }

    /// A position inside the frame's body.
    fn body_byte(&self, k: u64) -> u64 {
        self.offset + 72 + k % (self.len - 72)
    }
}

/// Every frame on disk, in log order, read with the documented layout of
/// compressed segment files (`LOOMSEG2` header, then frames).
fn frames_on_disk(dir: &Path) -> Result<Vec<Frame>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for segment in 0.. {
        let path = dir.join(format!("segment-{segment:08}.log"));
        let Ok(bytes) = std::fs::read(&path) else {
            break;
        };
        assert_eq!(&bytes[..8], b"LOOMSEG2", "segment {segment} is compressed");
        let mut o = 16usize;
        while o + 72 <= bytes.len() {
            let magic = u32::from_le_bytes(bytes[o..o + 4].try_into()?);
            if magic == 0 {
                break;
            }
            let body = u32::from_le_bytes(bytes[o + 4..o + 8].try_into()?) as u64;
            let count = u32::from_le_bytes(bytes[o + 48..o + 52].try_into()?) as u64;
            let len = 72 + body;
            out.push(Frame {
                segment,
                offset: o as u64,
                len,
                count,
            });
            o += ((len + 7) & !7) as usize;
        }
    }
    Ok(out)
}

#[test]
fn out_of_order_oversized_and_unknown_are_errors() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (mut w, r) = loom::open(dir.path(), small_config())?;
    let h = w.declare_source(SourceId(5), Some(spec()))?;
    w.push(h, 100, &record(1, 0))?;
    let e = w.push(h, 99, &record(2, 0));
    assert!(
        matches!(
            e,
            Err(Error::OutOfOrder {
                timestamp_us: 99,
                newest_us: 100,
                ..
            })
        ),
        "{e:?}"
    );
    w.push(h, 100, &record(3, 0))?;
    let big = vec![0u8; w.max_record_size() + 1];
    let e = w.push(h, 101, &big);
    assert!(matches!(e, Err(Error::RecordTooLarge { .. })), "{e:?}");
    assert!(e.is_err_and(|e| e.to_string().contains("exceeds the maximum")));
    w.push(h, 101, &vec![1u8; w.max_record_size()])?;
    w.sync();
    assert_eq!(r.aggregate(SourceId(5), 0, u64::MAX)?.count, 3);
    assert!(matches!(
        r.aggregate(SourceId(6), 0, 10),
        Err(Error::UnknownSource(SourceId(6)))
    ));
    assert!(matches!(
        r.percentile(SourceId(5), 0, 10, 1.5),
        Err(Error::InvalidQuery(_))
    ));
    let plain = w.declare_source(SourceId(7), None)?;
    w.push(plain, 1, b"x")?;
    w.sync();
    assert!(matches!(
        r.aggregate(SourceId(7), 0, 10),
        Err(Error::NoRangeIndex(_))
    ));
    let other = loom::RangeIndexSpec {
        interval: 3,
        ..spec()
    };
    assert!(matches!(
        w.declare_source(SourceId(5), Some(other)),
        Err(Error::IndexMismatch(_))
    ));
    let bad = loom::Config {
        block_size: 1000,
        ..small_config()
    };
    assert!(matches!(
        loom::open(&dir.path().join("x"), bad),
        Err(Error::InvalidConfig(_))
    ));
    Ok(())
}

/// Reopens with every segment verified; returns the recovery report and
/// every record of sources 1 and 2.
type Reopened = (loom::RecoveryReport, Vec<(SourceId, u64, Vec<u8>)>);

fn reopened_verified(dir: &Path) -> Result<Reopened, Box<dyn std::error::Error>> {
    let cfg = loom::Config {
        verify_on_open: true,
        ..small_config()
    };
    let (mut w, r) = loom::open(dir, cfg)?;
    let report = w.recovery().clone();
    let mut got = Vec::new();
    for id in [SourceId(1), SourceId(2)] {
        w.declare_source(id, Some(spec()))?;
        r.scan(id, 0, u64::MAX, |t, b| got.push((id, t, b.to_vec())))?;
    }
    w.close()?;
    Ok((report, got))
}

/// Each source's records are what was written with at most one contiguous
/// run missing; returns how many are missing in all.
fn assert_one_run_missing(model: &Model, got: &[(SourceId, u64, Vec<u8>)]) -> usize {
    let mut missing = 0;
    for id in [SourceId(1), SourceId(2)] {
        let want: Vec<_> = model
            .records
            .iter()
            .filter(|r| r.0 == id)
            .cloned()
            .collect();
        let have: Vec<_> = got.iter().filter(|r| r.0 == id).cloned().collect();
        assert!(have.len() <= want.len(), "source {id} has invented records");
        let head = have.iter().zip(&want).take_while(|(a, b)| a == b).count();
        let gap = want.len() - have.len();
        assert_eq!(
            have[head..],
            want[head + gap..],
            "source {id}: more than one run of records is missing"
        );
        missing += gap;
    }
    missing
}

#[test]
fn flipped_bytes_skip_only_the_corrupt_chunk() -> Result<(), Box<dyn std::error::Error>> {
    for pick in [3usize, 17, 40, 77] {
        let dir = tempfile::tempdir()?;
        let model = fill(dir.path(), 6000)?;
        let frames = frames_on_disk(dir.path())?;
        let victim = frames[pick % frames.len()];
        let pos = victim.body_byte(pick as u64 * 13);
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(victim.path(dir.path()))?;
        let mut b = [0u8; 1];
        f.read_at(&mut b, pos)?;
        f.write_at(&[b[0] ^ 0x5a], pos)?;
        drop(f);
        let (report, got) = reopened_verified(dir.path())?;
        assert_eq!(report.skipped.len(), 1, "{report:?}");
        assert!(report.skipped[0].2.contains("checksum"), "{report:?}");
        assert_eq!(
            (report.skipped[0].0, report.skipped[0].1),
            (victim.segment, victim.offset),
            "the corrupt frame's place is reported"
        );
        assert!(!report.holes.is_empty(), "the source's gap is reported");
        let missing = assert_one_run_missing(&model, &got);
        assert_eq!(
            missing as u64, victim.count,
            "exactly the corrupt chunk's records are missing, every later chunk is kept"
        );
        // The store is writable again and a second reopen keeps it all.
        let (mut w, r) = loom::open(dir.path(), small_config())?;
        let h = w.declare_source(SourceId(1), Some(spec()))?;
        w.push(h, 1_000_000, &record(5, 0))?;
        w.close()?;
        drop(r);
        let (_, again) = reopened_verified(dir.path())?;
        assert_eq!(again.len(), got.len() + 1);
    }
    Ok(())
}

#[test]
fn zeros_in_the_middle_are_a_hole_not_the_end() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let model = fill(dir.path(), 6000)?;
    let frames = frames_on_disk(dir.path())?;
    // A frame with another after it in the same file: zeros there are a
    // hole, not the end of the file's frames.
    let k = (frames.len() / 3..frames.len() - 1)
        .find(|&k| frames[k + 1].segment == frames[k].segment)
        .ok_or("no frame followed by another")?;
    let victim = frames[k];
    let f = OpenOptions::new()
        .write(true)
        .open(victim.path(dir.path()))?;
    f.write_at(&vec![0u8; victim.len as usize], victim.offset)?;
    drop(f);
    let (report, got) = reopened_verified(dir.path())?;
    assert!(
        report.holes.iter().any(|h| h.contains("zeros")),
        "{:?}",
        report.holes
    );
    assert!(report.torn_tail.is_none(), "{report:?}");
    assert_eq!(assert_one_run_missing(&model, &got) as u64, victim.count);
    Ok(())
}

#[test]
fn truncated_segment_loses_only_what_was_cut() -> Result<(), Box<dyn std::error::Error>> {
    for cut_permille in [0u64, 1, 100, 333, 500, 777, 999] {
        let dir = tempfile::tempdir()?;
        let model = fill(dir.path(), 6000)?;
        let frames = frames_on_disk(dir.path())?;
        let path = dir.path().join("segment-00000000.log");
        let f = OpenOptions::new().write(true).open(&path)?;
        let cut_at = (f.metadata()?.len() * cut_permille / 1000).max(1);
        f.set_len(cut_at)?;
        drop(f);
        // A cut inside the file header loses the whole segment.
        let lost: u64 = frames
            .iter()
            .filter(|c| c.segment == 0 && (c.offset + c.len > cut_at || cut_at < 16))
            .map(|c| c.count)
            .sum();
        let (report, got) = reopened_verified(dir.path())?;
        assert_eq!(
            got.len() as u64,
            model.records.len() as u64 - lost,
            "every chunk outside the cut is kept"
        );
        for id in [SourceId(1), SourceId(2)] {
            let want: Vec<_> = model.records.iter().filter(|r| r.0 == id).collect();
            let have: Vec<_> = got.iter().filter(|r| r.0 == id).collect();
            let mut w = want.iter();
            for h in &have {
                assert!(
                    w.any(|x| x == h),
                    "source {id}: a record out of order or invented"
                );
            }
        }
        if lost > 0 {
            assert!(
                !report.holes.is_empty(),
                "the gap after the cut is reported"
            );
        }
    }
    Ok(())
}

#[test]
fn corruption_found_by_a_query_is_an_error() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    fill(dir.path(), 6000)?;
    let (mut w, r) = loom::open(dir.path(), small_config())?;
    w.declare_source(SourceId(1), Some(spec()))?;
    let frames = frames_on_disk(dir.path())?;
    let victim = frames[frames.len() / 2];
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(victim.path(dir.path()))?;
    let at = victim.body_byte(3);
    let mut b = [0u8; 1];
    f.read_at(&mut b, at)?;
    f.write_at(&[!b[0]], at)?;
    drop(f);
    let mut errors = 0;
    for id in [SourceId(1), SourceId(2)] {
        match r.scan(id, 0, u64::MAX, |_, _| {}) {
            Err(Error::Corrupted { reason, .. }) => {
                assert!(reason.contains("checksum"), "{reason}");
                errors += 1;
            }
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
    }
    assert_eq!(errors, 1, "exactly the source owning the chunk reports it");
    w.close()?;
    Ok(())
}

#[test]
fn garbage_meta_file_is_a_clear_error() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("loom.meta"), "hello")?;
    match loom::open(dir.path(), small_config()) {
        Err(Error::Corrupted { reason, .. }) => assert!(reason.contains("loom.meta"), "{reason}"),
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("garbage meta file accepted".into()),
    }
    Ok(())
}

mod garbage {
    use super::*;
    use proptest::prelude::*;

    /// Segment 0 of a store filled by `fill`, and everything `fill` wrote
    /// (segment 0 holds a prefix of it; later segments are left out).
    fn valid_segment() -> &'static (Vec<u8>, Model) {
        static SEG: std::sync::OnceLock<(Vec<u8>, Model)> = std::sync::OnceLock::new();
        SEG.get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let model = fill(dir.path(), 3000).expect("fill");
            let bytes = std::fs::read(dir.path().join("segment-00000000.log")).expect("segment");
            (bytes, model)
        })
    }

    /// How the bytes of segment 0 are made.
    #[derive(Debug, Clone)]
    enum Mangle {
        /// Random bytes: nothing in them was written by Loom.
        Random(Vec<u8>),
        /// The valid segment with bytes overwritten at random places.
        Edited(Vec<(prop::sample::Index, u8)>),
        /// The valid segment cut short at a random place.
        Truncated(prop::sample::Index),
    }

    fn mangle() -> impl Strategy<Value = Mangle> {
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..20_000).prop_map(Mangle::Random),
            prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8)
                .prop_map(Mangle::Edited),
            any::<prop::sample::Index>().prop_map(Mangle::Truncated),
        ]
    }

    /// Ok when `got` is `written` with records left out: every record of
    /// `got` was written, in the same order, none twice. Records are told
    /// apart by (timestamp, bytes); `fill` gives every record its own
    /// timestamp.
    fn is_subsequence(got: &[(u64, Vec<u8>)], written: &[(u64, Vec<u8>)]) -> Result<(), String> {
        let mut rest = written.iter();
        for (k, g) in got.iter().enumerate() {
            if !rest.any(|w| w == g) {
                return Err(format!(
                    "returned record {k} (ts {}, {} bytes) was not written, or not after \
                     the record returned before it",
                    g.0,
                    g.1.len()
                ));
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

        /// Random bytes, a valid segment with random bytes overwritten, or a
        /// valid segment cut short, never make open or a query panic, and
        /// every source returns only records that were written to it, in
        /// write order: from random bytes none; from an edited segment a
        /// subsequence of what was written to that source (whole runs kept,
        /// whatever recovery dropped around a damaged chunk left out, no
        /// record invented, changed, repeated or moved); from a segment cut
        /// short an exact prefix of what was written to that source.
        #[test]
        fn mangled_segments_never_panic(mangle in mangle()) {
            let dir = tempfile::tempdir()?;
            let (valid, model) = valid_segment();
            let bytes = match &mangle {
                Mangle::Random(r) => r.clone(),
                Mangle::Edited(edits) => {
                    let mut b = valid.clone();
                    for (at, x) in edits {
                        let i = at.index(b.len());
                        b[i] = *x;
                    }
                    b
                }
                Mangle::Truncated(at) => valid[..at.index(valid.len())].to_vec(),
            };
            std::fs::write(dir.path().join("segment-00000000.log"), &bytes)?;
            let opened = loom::open(dir.path(), small_config());
            let (mut w, r) = match (opened, &mangle) {
                (Ok(x), _) => x,
                (Err(e), Mangle::Truncated(_)) => {
                    return Err(TestCaseError::fail(format!("a torn tail must recover: {e}")));
                }
                (Err(e), _) => {
                    prop_assert!(!e.to_string().is_empty());
                    return Ok(());
                }
            };
            for id in r.sources() {
                let _ = w.declare_source(id, Some(spec()));
                let mut got = Vec::new();
                let st = r.scan(id, 0, u64::MAX, |t, b| got.push((t, b.to_vec())))?;
                prop_assert_eq!(st.records_scanned, got.len() as u64);
                let written = model.scan(id, 0, u64::MAX);
                match &mangle {
                    Mangle::Random(_) => {
                        prop_assert!(got.is_empty(), "{} records of source {:?} from random bytes", got.len(), id);
                    }
                    Mangle::Edited(_) => {
                        if let Err(e) = is_subsequence(&got, &written) {
                            return Err(TestCaseError::fail(format!("source {id:?}: {e}")));
                        }
                    }
                    Mangle::Truncated(_) => {
                        prop_assert!(got.len() <= written.len(), "source {:?}: more records than written", id);
                        prop_assert_eq!(&got[..], &written[..got.len()], "source {:?} is not an exact prefix", id);
                    }
                }
                let _ = r.percentile(id, 0, u64::MAX, 0.5);
                let _ = r.count_matching(id, 0, u64::MAX, 0, 500, loom::IndexMode::NoIndex);
            }
            w.close()?;
        }
    }

    /// The subsequence check itself: it must reject what recovery must never
    /// return.
    #[test]
    fn subsequence_check_rejects_invented_changed_and_reordered_records() {
        let rec = |t: u64| (t, vec![t as u8; 3]);
        let written: Vec<_> = (0..6).map(rec).collect();
        for ok in [
            vec![],
            vec![rec(0), rec(1)],
            vec![rec(0), rec(3), rec(4), rec(5)],
            written.clone(),
        ] {
            assert!(is_subsequence(&ok, &written).is_ok(), "{ok:?}");
        }
        let changed = (2, vec![9u8; 3]);
        for bad in [
            vec![rec(7)],
            vec![rec(0), changed],
            vec![rec(3), rec(2)],
            vec![rec(1), rec(1)],
        ] {
            assert!(is_subsequence(&bad, &written).is_err(), "{bad:?}");
        }
    }
}
