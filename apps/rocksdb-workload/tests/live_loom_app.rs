//! A 20 s live P3 run (KV ops + syscall and page-cache probes) into the real
//! `loom-app` endpoint: everything the workload says it sent is received,
//! the phase queries count exactly what was sent less at most what loom-app
//! counted as dropped, and their latency answers are consistent.
//!
//! Needs root (the probes load into the kernel) and the `loom-app` binary
//! next to this test's profile directory (`make test` builds every binary
//! first; otherwise `cargo build [--release] -p loom-app`).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rocksdb_workload::{Destination, WorkloadConfig};
use testing::{num, LoomApp};

#[test]
fn live_p3_run_into_loom_app_arrives_whole_and_answers_queries() {
    let store = tempfile::tempdir().expect("store dir");
    let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("rocksdb dir");
    let app = LoomApp::builder()
        .args([
            "--query",
            "rocksdb-p1,rocksdb-p2,rocksdb-p3",
            "--query-at-end",
            "--stop-after-connections",
            "1",
            "--machine-output",
            "--timestamps",
            "event",
            "--report-interval-s",
            "5",
        ])
        .store(store.path())
        .start();
    let addr = app.tcp();

    let config = WorkloadConfig {
        instances: 2,
        threads_per_instance: 4,
        duration: Duration::from_secs(20),
        warmup: Duration::from_secs(2),
        rocksdb_path: data.path().to_path_buf(),
        drop_caches_interval: Some(Duration::from_secs(5)),
        syscalls: true,
        page_cache: true,
        destination: Destination::Tcp(addr),
        ..WorkloadConfig::default()
    };
    let summary = rocksdb_workload::run(config, &AtomicBool::new(false), |_| {}, |_| {})
        .unwrap_or_else(|e| panic!("workload: {e}"));

    let end = app.wait();
    let rest = &end.lines;
    assert!(
        end.success(),
        "loom-app failed: {}\n{}",
        end.status,
        rest.join("\n")
    );
    let find = |prefix: &str| testing::line_fields(rest, prefix);

    eprintln!(
        "workload: {summary:?}\nloom-app:\n{}",
        rest.iter()
            .filter(|l| l.starts_with("ANSWER") || l.starts_with("STATS") || l.starts_with("Final"))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Everything sent arrived; what loom-app itself dropped is counted, and
    // every received record not counted as dropped was stored. loom-app's
    // drop count covers all kinds, so it bounds what each query may miss.
    let stats = find("STATS ");
    let received = num(&stats, "received");
    // Records later than the reorder window are refused and counted as
    // late (never stored at another time): a counted loss, like drops.
    let dropped = num(&stats, "dropped") + num(&stats, "late");
    assert_eq!(received, summary.sent(), "received vs sent; {summary:?}");
    assert_eq!(num(&stats, "ingested") + dropped, received);
    assert_eq!(num(&stats, "bad_connections"), 0);
    assert!(
        summary.kv_reads_sent > 0 && summary.syscall_sent > 0 && summary.page_cache_sent > 0,
        "{summary:?}"
    );
    let stored_all_but_counted_drops = |query: &str, stored: u64, sent: u64| {
        assert!(
            stored <= sent && stored + dropped >= sent,
            "{query}: {stored} stored of {sent} sent, loom-app dropped {dropped}: \
             stored must be sent minus at most the counted drops"
        );
    };

    // P1: KV read latency over the whole run.
    let p1 = find("ANSWER query=rocksdb-p1");
    stored_all_but_counted_drops("P1 KV reads", num(&p1, "count"), summary.kv_reads_sent);
    assert!(num(&p1, "max") >= num(&p1, "p9999"), "{p1:?}");
    // P2: pread64 latency (RocksDB reads SST blocks with pread64). The
    // workload counts syscall records, not pread64 alone: only a bound.
    let p2 = find("ANSWER query=rocksdb-p2");
    assert!(
        num(&p2, "count") > 0 && num(&p2, "count") <= summary.syscall_sent,
        "{p2:?}"
    );
    assert!(num(&p2, "max") >= num(&p2, "p9999"), "{p2:?}");
    // P3: page-cache events.
    let p3 = find("ANSWER query=rocksdb-p3");
    stored_all_but_counted_drops("P3 page cache", num(&p3, "count"), summary.page_cache_sent);
}
