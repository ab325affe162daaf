//! A short run delivers exactly the records it says it sent, over TCP and
//! into a recording file.

use std::net::TcpListener;
use std::time::Duration;

use rocksdb_workload::{Destination, WorkloadConfig};
use telemetry::{Batch, FrameReader, Record, RecordingReader};

fn small(dir: &std::path::Path, destination: Destination) -> WorkloadConfig {
    WorkloadConfig {
        instances: 1,
        threads_per_instance: 2,
        hot_keys: 1000,
        key_space: 100_000,
        duration: Duration::from_secs(2),
        warmup: Duration::from_millis(200),
        rocksdb_path: dir.join("db"),
        drop_caches_interval: None,
        destination,
        ..WorkloadConfig::default()
    }
}

fn check_records(records: &[Record]) {
    assert!(!records.is_empty());
    for r in records {
        match r {
            Record::KvOp(op) => assert!(op.duration_us < 10_000_000, "{op:?}"),
            other => panic!("unexpected record without probes: {other:?}"),
        }
    }
}

#[test]
fn tcp_receiver_gets_every_sent_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let receiver = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut frames = FrameReader::new(stream);
        let mut batch = Batch::default();
        let mut records = Vec::new();
        while frames.read_into(&mut batch).expect("valid frame") {
            records.extend_from_slice(&batch.records);
        }
        records
    });
    let mut lines = 0;
    let summary = rocksdb_workload::run(
        small(dir.path(), Destination::Tcp(addr)),
        |_| lines += 1,
        |_| {},
    )
    .expect("run");
    let records = receiver.join().expect("receiver");
    assert_eq!(records.len() as u64, summary.sent());
    assert_eq!(summary.dropped(), 0);
    assert!(
        summary.ops > 0 && lines == 2,
        "ops {} lines {lines}",
        summary.ops
    );
    check_records(&records);
}

#[test]
fn recording_holds_every_sent_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("p1.rec");
    let summary = rocksdb_workload::run(
        small(dir.path(), Destination::Recording(path.clone())),
        |_| {},
        |_| {},
    )
    .expect("run");
    let mut reader = RecordingReader::open(&path).expect("open recording");
    assert_eq!(reader.header().workload, "rocksdb");
    assert_eq!(reader.header().phase, "p1");
    let mut batch = Batch::default();
    let mut records = Vec::new();
    while reader.read_into(&mut batch).expect("valid block") {
        records.extend_from_slice(&batch.records);
    }
    assert_eq!(records.len() as u64, summary.sent());
    check_records(&records);
}
