//! Export to an S3-compatible bucket (moto's server on loopback): the same
//! files as to a directory; a missing bucket, missing or refused
//! credentials and an unreachable endpoint are refused naming the cause.

mod common;
mod support;

use common::{canonical, read_back, syscall, Feeder};
use export::{ExportConfig, Exporter, Target};
use support::Moto;

#[test]
fn s3_export_matches_brute_force_and_errors_name_their_cause() {
    let moto = Moto::start();
    moto.set_env();
    moto.create_bucket("fleet");
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut w, r) = loom::open(&dir.path().join("store"), loom::Config::default()).expect("open");
    let mut f = Feeder::new("web-1");
    let s = syscall(17, "pread64", None);
    for i in 0..20_000u64 {
        f.syscall(&mut w, 1, &s, 1_795_427_940_000_000 + i * 10_000, i);
    }
    w.persist().expect("persist");
    let target = Target::open("s3://fleet/exports/v1").expect("bucket");
    let mut ex = Exporter::open(target, ExportConfig::new("web-1")).expect("exporter");
    let round = ex.export(&r.durable_snapshot()).expect("export");
    assert_eq!(round.records, 20_000);
    let local = dir.path().join("copy");
    moto.download("fleet", "exports/v1", &local);
    assert!(
        local.join("_loom_export/web-1.json").exists(),
        "manifest in the bucket"
    );
    assert_eq!(canonical(read_back(&local)), canonical(f.rows.clone()));
    // Again: nothing new, nothing twice.
    let target = Target::open("s3://fleet/exports/v1").expect("bucket");
    let mut ex = Exporter::open(target, ExportConfig::new("web-1")).expect("exporter");
    assert_eq!(ex.export(&r.durable_snapshot()).expect("export").records, 0);

    let err = |url: &str| match Target::open(url) {
        Ok(_) => panic!("{url} accepted"),
        Err(e) => e.to_string(),
    };
    let e = err("s3://no-such-bucket/x");
    assert!(e.contains("bucket does not exist"), "{e}");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "");
    let e = err("s3://fleet/x");
    assert!(e.contains("missing credentials"), "{e}");
    moto.set_env();
    let mut moto = moto;
    moto.stop();
    let e = err("s3://fleet/x");
    assert!(e.contains("cannot connect") || e.contains("connect"), "{e}");
    w.close().expect("close");
}
