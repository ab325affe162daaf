//! Retention that drops log the exporter has not exported yet: the loss is
//! counted in the manifest (records it had seen, log bytes it had not),
//! and everything still stored is exported once.

mod common;

use common::{canonical, read_back, syscall, Feeder, Row};
use export::{ExportConfig, Exporter, Target};

#[test]
fn retention_before_export_is_counted_never_silent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = loom::Config {
        chunk_size: 4096,
        block_size: 64 << 10,
        segment_size: 256 << 10,
        retention_bytes: Some(512 << 10),
        ..loom::Config::default()
    };
    let (mut w, r) = loom::open(&dir.path().join("store"), cfg).expect("open");
    let out = dir.path().join("out");
    let target = Target::open(out.to_str().expect("utf-8")).expect("target");
    let mut ex = Exporter::open(target, ExportConfig::new("h")).expect("exporter");
    let mut f = Feeder::new("h");
    let s = syscall(0, "read", None);
    let mut ts = 1_795_427_940_000_000u64;
    let mut push = |f: &mut Feeder, w: &mut loom::Writer, n: u64| {
        for i in 0..n {
            ts += 10;
            f.syscall(w, 1, &s, ts, i);
        }
        w.persist().expect("persist");
    };
    push(&mut f, &mut w, 5_000);
    ex.export(&r.durable_snapshot()).expect("export");
    let exported_first = f.rows.len();
    // Then far more than retention keeps, persisted segment by segment,
    // none of it seen by the exporter.
    for _ in 0..40 {
        push(&mut f, &mut w, 2_000);
    }
    let snap = r.durable_snapshot();
    assert!(snap.retained_from() > 0, "retention dropped segments");
    let kept = snap.retained_count(loom::SourceId(1));
    let round = ex.export(&snap).expect("export");
    let m = ex.manifest().clone();
    assert!(
        m.log_bytes_lost_to_retention > 0 || m.records_lost_to_retention > 0,
        "the loss is reported: {m:?}"
    );
    // Exported: the first round plus exactly what the store still holds
    // beyond it.
    assert_eq!(round.records, kept, "{round:?}");
    let got = canonical(read_back(&out));
    let mut want: Vec<Row> = f.rows[..exported_first].to_vec();
    want.extend_from_slice(&f.rows[f.rows.len() - kept as usize..]);
    assert_eq!(got, canonical(want));
    w.close().expect("close");
}
