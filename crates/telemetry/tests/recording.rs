//! Recording files: round trips; corrupted and truncated files give typed
//! errors and never panic.

mod common;

use proptest::prelude::*;
use telemetry::{Batch, RecordingError, RecordingHeader, RecordingReader, RecordingWriter};

fn header() -> RecordingHeader {
    RecordingHeader {
        workload: "rocksdb".into(),
        phase: "p2".into(),
        synthetic: true,
        description: "test".into(),
    }
}

fn file(batches: &[Batch]) -> Vec<u8> {
    let mut w = RecordingWriter::new(Vec::new(), &header()).unwrap();
    for b in batches {
        w.write_batch(b).unwrap();
    }
    w.finish().unwrap()
}

fn read_all(bytes: &[u8]) -> Result<(RecordingHeader, Vec<Batch>), RecordingError> {
    let r = RecordingReader::new(bytes)?;
    let h = r.header().clone();
    let batches = r.collect::<Result<Vec<_>, _>>()?;
    Ok((h, batches))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn recordings_round_trip(batches in proptest::collection::vec(common::batch(), 0..6)) {
        let (h, got) = read_all(&file(&batches)).unwrap();
        prop_assert_eq!(h, header());
        prop_assert_eq!(got, batches);
    }

    #[test]
    fn truncated_files_are_rejected(batches in proptest::collection::vec(common::batch(), 1..4), cut in any::<prop::sample::Index>()) {
        let f = file(&batches);
        let n = cut.index(f.len());
        match read_all(&f[..n]) {
            // Cutting exactly at a block boundary is a shorter, valid file.
            Ok((_, got)) => prop_assert!(got.len() < batches.len()),
            Err(RecordingError::Truncated { .. }) => {}
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }

    #[test]
    fn single_bit_flips_are_rejected(batches in proptest::collection::vec(common::batch(), 1..4), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut f = file(&batches);
        let i = pos.index(f.len());
        f[i] ^= 1 << bit;
        prop_assert!(read_all(&f).is_err());
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = read_all(&bytes);
        let mut with_magic = b"LOOMREC\0".to_vec();
        with_magic.extend_from_slice(&bytes);
        let _ = read_all(&with_magic);
    }
}

#[test]
fn header_says_synthetic_and_names_workload() {
    let f = file(&[]);
    let r = RecordingReader::new(&f[..]).unwrap();
    assert!(r.header().synthetic);
    assert_eq!(r.header().workload, "rocksdb");
    assert_eq!(r.header().phase, "p2");
}

#[test]
fn oversized_batch_lengths_are_rejected() {
    let f = file(&[Batch::new(3, vec![])]);
    let hdr_len = RecordingReader::new(&f[..])
        .map(|_| ())
        .map(|_| f.len() - 28 - 9)
        .unwrap();
    // Block header starts right after the file header; raw length at +16.
    let mut g = f.clone();
    g[hdr_len + 16..hdr_len + 20].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        read_all(&g),
        Err(RecordingError::BatchTooLarge {
            what: "raw length",
            ..
        })
    ));
    let mut g = f.clone();
    g[hdr_len + 20..hdr_len + 24].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        read_all(&g),
        Err(RecordingError::BatchTooLarge {
            what: "compressed length",
            ..
        })
    ));
}

#[test]
fn not_a_recording_and_errors_stop_iteration() {
    assert!(matches!(
        read_all(b"hello world, not a recording"),
        Err(RecordingError::BadMagic { .. })
    ));
    assert!(matches!(
        read_all(b""),
        Err(RecordingError::Truncated { .. })
    ));
    let mut f = file(&[Batch::new(1, vec![]), Batch::new(2, vec![])]);
    let n = f.len();
    f[n - 1] ^= 0xff; // corrupt the last block's zstd bytes
    let mut r = RecordingReader::new(&f[..]).unwrap();
    assert!(r.next().unwrap().is_ok());
    assert!(matches!(
        r.next(),
        Some(Err(RecordingError::BatchChecksum { index: 1, .. }))
    ));
    assert!(r.next().is_none());
}

#[test]
fn files_on_disk_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec");
    let batches = vec![Batch::new(10, vec![]), Batch::new(20, vec![])];
    let mut w = RecordingWriter::create(&p, &header()).unwrap();
    for b in &batches {
        w.write_batch(b).unwrap();
    }
    w.finish().unwrap();
    let got: Vec<Batch> = RecordingReader::open(&p)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, batches);
    let missing = RecordingReader::open(&dir.path().join("nope"))
        .err()
        .unwrap();
    assert!(missing.to_string().contains("nope"));
}
