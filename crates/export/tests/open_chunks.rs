//! Records in open chunks — durable in the store's journal of open chunks
//! but not sealed, so without a log position yet — are exported by tail
//! batches, and skipped once their chunk seals: every durable record lands
//! exactly once, across exporter restarts, a clean close of the store
//! (which seals every open chunk) and a reopen. Brute force: the rows kept
//! aside while pushing.

mod common;

use common::{canonical, read_back, syscall, Feeder};
use export::{ExportConfig, Exporter, Target};
use loom::Config;

/// 2026-11-23 09:59:00 UTC in µs.
const T0: u64 = 1_795_427_940_000_000;

fn config() -> Config {
    Config {
        chunk_size: 4096,
        // A chunk seals at a persist 30 s of data after its first record:
        // the slow series stays open for several rounds.
        seal_after_us: Some(30_000_000),
        ..Config::default()
    }
}

/// One round with a fresh exporter (as a restarted loom-app makes).
fn export(r: &loom::Reader, to: &str) -> export::Round {
    let target = Target::open(to).expect("target");
    let mut ex = Exporter::open(target, ExportConfig::new("db-1")).expect("exporter");
    ex.export(&r.durable_snapshot()).expect("export")
}

#[test]
fn open_chunk_records_are_exported_once_before_and_after_they_seal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, out) = (dir.path().join("store"), dir.path().join("out"));
    let to = out.to_str().expect("utf-8").to_string();
    let (fast, slow, same) = (
        syscall(0, "read", None),
        syscall(17, "pread64", None),
        syscall(1, "write", None),
    );
    let mut f = Feeder::new("db-1");
    let (mut w, mut r) = loom::open(&store, config()).expect("open");
    let mut tails_seen = 0;
    let mut i = 0u64;
    for round in 0..9u64 {
        // 10 s of data per round: a full-chunk series, a slow one (every
        // 2 s) and one writing 3 records at each of its times.
        for _ in 0..2_500 {
            let ts = T0 + i * 4_000;
            f.syscall(&mut w, 1, &fast, ts, i);
            if i.is_multiple_of(500) {
                f.syscall(&mut w, 2, &slow, ts, i);
            }
            if i.is_multiple_of(700) {
                for k in 0..3 {
                    f.syscall(&mut w, 3, &same, ts, i + k);
                }
            }
            i += 1;
        }
        w.persist().expect("persist");
        let snap = r.durable_snapshot();
        tails_seen += [1, 2, 3]
            .iter()
            .filter(|&&id| snap.open_tail_count(loom::SourceId(id)) > 0)
            .count();
        drop(snap);
        let round_export = export(&r, &to);
        assert_eq!(
            canonical(read_back(&out)),
            canonical(f.rows.clone()),
            "round {round}: every durable record once ({round_export:?})"
        );
        if round == 4 {
            // A clean close seals every open chunk; the reopened store's
            // chunks are above the exporter's position, their first
            // records exported already.
            w.close().expect("close");
            (w, r) = loom::open(&store, config()).expect("reopen");
        }
    }
    assert!(tails_seen >= 9, "open chunks were exported ({tails_seen})");
    // A second exporter finds nothing new; the closed store, opened
    // read-only as `loom export` does, neither.
    assert_eq!(export(&r, &to).records, 0);
    w.close().expect("close");
    let ro = loom::open_read_only(&store).expect("read-only");
    assert_eq!(export(&ro, &to).records, 0);
    let rows = read_back(&out);
    assert_eq!(rows.len(), f.rows.len());
    assert_eq!(canonical(rows), canonical(f.rows));
}
