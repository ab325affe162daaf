//! The telemetry stream's token (wire protocol version 2): a non-loopback
//! --addr without --auth-token-file is refused at start; with a token, a
//! wrong or missing one and a version-1 sender are closed (counted as
//! auth_refused), the right one is welcomed and its records stored with
//! the tags host and comm.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use telemetry::wire::{self, sender, FrameType, Hello, SeriesTags};
use telemetry::{Batch, Record, RunQueue};
use testing::LoomApp;

#[test]
fn non_loopback_addr_needs_a_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let Err(out) = LoomApp::builder()
        .addr("0.0.0.0:0")
        .tcp_only()
        .store(&dir.path().join("s"))
        .try_start()
    else {
        panic!("loom-app listened on 0.0.0.0 without a token");
    };
    assert!(!out.success());
    let err = &out.stderr;
    assert!(err.contains("--auth-token-file"), "{err}");
}

fn hello(token: &str) -> Hello {
    Hello {
        sender_id: 7,
        flags: wire::control::HELLO_WALL_CLOCK,
        next_seq: 1,
        token: token.into(),
        host: "test-host".into(),
        agent: "stream_auth test".into(),
    }
}

#[test]
fn wrong_or_missing_tokens_are_closed_and_the_right_one_stores() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let app = LoomApp::builder()
        .tcp_only()
        .machine_quiet()
        .token_file(&token_file)
        .store(&dir.path().join("s"))
        .start();
    let addr = app.tcp();
    let connect = || {
        let s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    };
    for bad in ["wrong", ""] {
        let mut s = connect();
        match sender::handshake(&mut s, &hello(bad)) {
            Err(telemetry::WireError::Refused(why)) => assert!(why.contains("token"), "{why}"),
            other => panic!("token {bad:?}: {other:?}"),
        }
    }
    // A version-1 sender presents no token: closed without a store.
    let mut s = connect();
    let rec = Record::RunQueue(RunQueue {
        pid: 1,
        tid: 2,
        cpu: 0,
        start_us: 1_700_000_000_000_000,
        latency_us: 5,
    });
    let mut f = Vec::new();
    wire::encode_frame(&Batch::new(1, vec![rec]), &mut f).unwrap();
    s.write_all(&f).unwrap();
    let mut buf = [0u8; 1];
    let _ = std::io::Read::read(&mut s, &mut buf);

    let mut s = connect();
    sender::handshake(&mut s, &hello("s3cret")).expect("welcomed");
    let mut f = Vec::new();
    let tags = SeriesTags::new(1, &[("comm", "tester")]).unwrap();
    wire::encode_control(FrameType::Series, 0, 0, &tags.encode(), &mut f).unwrap();
    let mut payload = Vec::new();
    Batch::new(0, vec![rec; 3]).encode_payload_into(&mut payload);
    wire::encode_data_v2(1, 1, 3, 0, &payload, &mut f).unwrap();
    s.write_all(&f).unwrap();
    drop(s);
    std::thread::sleep(Duration::from_millis(1500));
    let end = app.stop();
    let stats = end.line("STATS ").expect("STATS line");
    assert!(stats.contains("auth_refused=3"), "{stats}");
    assert!(stats.contains("ingested=3"), "{stats}");
    let reader = loom::open_read_only(&dir.path().join("s")).unwrap();
    let snap = reader.snapshot();
    let id = telemetry::source::with_tags("runqueue", &[("comm", "tester"), ("host", "test-host")]);
    assert_eq!(snap.retained_count(loom::SourceId(id)), 3);
    assert_eq!(
        snap.time_span(loom::SourceId(id)),
        Some((1_700_000_000_000_000, 1_700_000_000_000_000)),
        "stored at the record's own wall-clock time"
    );
}
