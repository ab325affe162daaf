//! A short run delivers exactly the records it says it sent, over TCP and
//! into a recording file.

use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rocksdb_workload::{Destination, WorkloadConfig};
use telemetry::wire::FrameReader;
use telemetry::wire::{self, FrameType, Hello, Incoming, Welcome};
use telemetry::{Batch, Record, RecordingReader};

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
        // The workload speaks wire version 2: a HELLO answered by a
        // WELCOME, a SERIES declaration, then data frames.
        let (stream, _) = listener.accept().expect("accept");
        let mut frames = FrameReader::new(stream);
        let mut payload = Vec::new();
        let mut records = Vec::new();
        let mut welcomed = false;
        while let Some(frame) = frames.read_frame_into(&mut payload).expect("valid frame") {
            match frame {
                Incoming::Control(h, body) if h.frame_type == FrameType::Hello => {
                    Hello::decode(&body).expect("HELLO");
                    let welcome = Welcome {
                        durable_seq: 0,
                        flags: 0,
                        receiver: "destinations test".into(),
                    };
                    let mut out = Vec::new();
                    wire::encode_control(FrameType::Welcome, 0, 0, &welcome.encode(), &mut out)
                        .expect("WELCOME");
                    frames.get_mut().write_all(&out).expect("answer HELLO");
                    welcomed = true;
                }
                Incoming::Control(h, _) => {
                    assert_eq!(h.frame_type, FrameType::Series, "{h:?}");
                }
                Incoming::Data(h) => {
                    assert!(welcomed, "data before the HELLO");
                    records.extend(
                        telemetry::decode_payload(&payload, h.record_count).expect("records"),
                    );
                    payload.clear();
                }
            }
        }
        records
    });
    let mut lines = 0;
    let summary = rocksdb_workload::run(
        small(dir.path(), Destination::Tcp(addr)),
        &AtomicBool::new(false),
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
        &AtomicBool::new(false),
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
