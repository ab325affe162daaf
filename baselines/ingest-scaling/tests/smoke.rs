//! Runs the built `ingest-scaling` binary for one second per store at 64 B and
//! checks that its last stdout line is a parseable summary with records/s > 0.

use ingest_scaling::Summary;
use std::process::Command;

fn smoke(db: &str, extra: &[&str], want_label: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = dir.path().join("data");
    let output = Command::new(env!("CARGO_BIN_EXE_ingest-scaling"))
        .args(["--db", db, "--data-size", "64", "--duration-s", "1"])
        .args(extra)
        .arg("--storage-dir")
        .arg(&storage)
        .output()
        .expect("running ingest-scaling");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{db}: exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{db}: want exactly one stdout line, got {stdout:?}"
    );
    let summary = Summary::parse(lines[0])
        .unwrap_or_else(|| panic!("{db}: unparseable summary line {:?}", lines[0]));
    assert_eq!(summary.db, want_label);
    assert_eq!(summary.size, 64);
    assert!(
        summary.records_per_s > 0.0,
        "{db}: no records written: {stdout}"
    );
    assert!(summary.mb_per_s > 0.0, "{db}: no bytes written: {stdout}");
    let threads: usize = match extra {
        ["--threads", t] => t.parse().expect("thread count"),
        _ => 1,
    };
    assert_eq!(summary.threads, threads);
    // Data is deleted after the run; only the marked, empty directory remains.
    let left: Vec<_> = std::fs::read_dir(&storage)
        .expect("storage dir kept")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from(".ingest-scaling")]);
}

#[test]
fn loom_runs() {
    smoke("loom", &[], "loom");
}

#[test]
fn loom_with_index_runs() {
    smoke("loom", &["--index"], "loom-index");
}

#[test]
fn lmdb_runs() {
    smoke("lmdb", &[], "lmdb");
}

#[test]
fn rocksdb_runs() {
    smoke("rocksdb", &["--threads", "2"], "rocksdb");
}

#[test]
fn file_runs() {
    smoke("file", &["--threads", "2"], "file");
}

#[test]
fn rejects_threads_for_lmdb() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_ingest-scaling"))
        .args(["--db", "lmdb", "--data-size", "8", "--threads", "2"])
        .arg("--storage-dir")
        .arg(dir.path().join("data"))
        .output()
        .expect("running ingest-scaling");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
}
