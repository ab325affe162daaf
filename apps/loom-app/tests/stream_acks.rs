//! Acknowledgements on the TCP stream (wire protocol version 2) against
//! the real `loom-app`, from raw sockets: resent frames are recognised by
//! their per-sender sequence number and stored once (counted as
//! duplicates), ACK frames come as durability advances, WELCOME tells a
//! reconnecting sender its durable mark (also after a restart); hostile
//! senders (sequence numbers going back, a second HELLO, an ACK from a
//! sender, acknowledgements without wall-clock times, an old connection
//! of a sender that connected again) are closed alone, logged and counted,
//! while a good sender's frames are stored.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use telemetry::wire::FrameReader;
use telemetry::wire::{self, control, sender, FrameType, Hello, Incoming};
use telemetry::{Batch, Record, RunQueue};

struct App {
    app: testing::LoomApp,
    addr: String,
}

fn start_app(store: &Path) -> App {
    let app = testing::LoomApp::builder()
        .tcp_only()
        .machine_quiet()
        .args(["--reorder-window-ms", "0"])
        .acks(20)
        .store(store)
        .start();
    App {
        addr: app.tcp(),
        app,
    }
}

/// Stops loom-app cleanly; its STATS line.
fn stop(app: App) -> String {
    let end = app.app.stop();
    assert!(end.success(), "{}", end.stderr);
    end.line("STATS ").expect("a STATS line").to_string()
}

fn stat(stats: &str, key: &str) -> u64 {
    stats
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} in {stats}"))
}

fn hello(sender_id: u64, next_seq: u64, flags: u32) -> Hello {
    Hello {
        sender_id,
        flags,
        next_seq,
        token: String::new(),
        // One host (series) per sender: their records' times do not mix.
        host: format!("ack-host-{sender_id}"),
        agent: "stream_acks test".into(),
    }
}

const ACKED: u32 = control::HELLO_ACKS_WANTED | control::HELLO_WALL_CLOCK;
/// Wall-clock µs of the test's records (a fixed day in 2023).
const T0: u64 = 1_700_000_000_000_000;

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s
}

/// A data frame `seq` of `n` run-queue records at times `T0 + seq * 1000 + i`.
fn data(seq: u64, n: u64) -> Vec<u8> {
    let records = (0..n)
        .map(|i| {
            Record::RunQueue(RunQueue {
                pid: 1,
                tid: seq as u32,
                cpu: 0,
                start_us: T0 + seq * 1000 + i,
                latency_us: 5,
            })
        })
        .collect();
    let mut payload = Vec::new();
    Batch::new(0, records).encode_payload_into(&mut payload);
    let mut f = Vec::new();
    wire::encode_data_v2(seq, 0, n as u32, 0, &payload, &mut f).expect("frame");
    f
}

/// Reads ACK frames until one acknowledges `seq` (panics after 10 s).
fn wait_for_ack(s: &mut TcpStream, seq: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut r = FrameReader::new(s.try_clone().expect("clone"));
    while Instant::now() < deadline {
        match r.read_frame_into(&mut Vec::new()) {
            Ok(Some(Incoming::Control(h, _))) if h.frame_type == FrameType::Ack => {
                if h.seq >= seq {
                    return;
                }
            }
            other => panic!("expected ACK frames, got {other:?}"),
        }
    }
    panic!("no ACK of {seq} within 10 s");
}

/// True when the receiver closed the connection (EOF or reset) within 10 s.
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return true,
        }
    }
    false
}

fn records_of(store: &Path) -> Vec<u64> {
    let r = loom::open_read_only(store).expect("open read-only");
    let snap = r.snapshot();
    let mut out = Vec::new();
    for id in snap.sources() {
        r.scan(id, 0, u64::MAX, |ts, _| out.push(ts)).expect("scan");
    }
    out.sort_unstable();
    out
}

#[test]
fn resent_frames_are_stored_once_and_welcome_knows_the_durable_mark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("s");
    let app = start_app(&store);
    let mut s = connect(&app.addr);
    let w = sender::handshake(&mut s, &hello(42, 1, ACKED)).expect("welcome");
    assert_eq!((w.durable_seq, w.flags), (0, 1), "{w:?}");
    for seq in 1..=3 {
        s.write_all(&data(seq, 10)).expect("send");
    }
    wait_for_ack(&mut s, 3);
    drop(s);
    // The sender reconnects and resends 2 and 3 (say it missed their ACK),
    // then sends 4: 2 and 3 are duplicates.
    let mut s = connect(&app.addr);
    let w = sender::handshake(&mut s, &hello(42, 2, ACKED)).expect("welcome");
    assert_eq!(w.durable_seq, 3);
    for seq in 2..=4 {
        s.write_all(&data(seq, 10)).expect("send");
    }
    wait_for_ack(&mut s, 4);
    drop(s);
    let stats = stop(app);
    assert_eq!(stat(&stats, "duplicates"), 20, "{stats}");
    assert_eq!(stat(&stats, "ingested"), 40, "{stats}");
    let want: Vec<u64> = (1..=4)
        .flat_map(|seq| (0..10).map(move |i| T0 + seq * 1000 + i))
        .collect();
    assert_eq!(
        records_of(&store),
        want,
        "each record once, at its own time"
    );

    // After a restart the durable mark is still known; a resend of 4 and
    // a new 5 store only 5.
    let app = start_app(&store);
    let mut s = connect(&app.addr);
    let w = sender::handshake(&mut s, &hello(42, 4, ACKED)).expect("welcome");
    assert_eq!(w.durable_seq, 4, "the durable mark survives a restart");
    s.write_all(&data(4, 10)).expect("send");
    s.write_all(&data(5, 10)).expect("send");
    wait_for_ack(&mut s, 5);
    drop(s);
    let stats = stop(app);
    assert_eq!(stat(&stats, "duplicates"), 10, "{stats}");
    assert_eq!(records_of(&store).len(), 50);
}

#[test]
fn hostile_ack_input_closes_only_that_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("s");
    let app = start_app(&store);
    // A good acknowledged sender, open throughout.
    let mut good = connect(&app.addr);
    sender::handshake(&mut good, &hello(1, 1, ACKED)).expect("welcome");
    good.write_all(&data(1, 5)).expect("send");

    // Sequence numbers going back.
    let mut s = connect(&app.addr);
    sender::handshake(&mut s, &hello(2, 1, ACKED)).expect("welcome");
    s.write_all(&data(7, 5)).expect("send");
    s.write_all(&data(6, 5)).expect("send");
    assert!(
        closed(&mut s),
        "a sequence going back closes the connection"
    );

    // A second (replayed) HELLO on a connection.
    let mut s = connect(&app.addr);
    sender::handshake(&mut s, &hello(3, 1, ACKED)).expect("welcome");
    let mut f = Vec::new();
    wire::encode_control(
        FrameType::Hello,
        0,
        0,
        &hello(3, 1, ACKED).encode().unwrap(),
        &mut f,
    )
    .unwrap();
    s.write_all(&f).expect("send");
    assert!(closed(&mut s), "a second HELLO closes the connection");

    // An ACK frame from a sender (claiming the receiver holds everything).
    let mut s = connect(&app.addr);
    sender::handshake(&mut s, &hello(4, 1, ACKED)).expect("welcome");
    let mut f = Vec::new();
    wire::encode_control(FrameType::Ack, u64::MAX, 0, &[], &mut f).unwrap();
    s.write_all(&f).expect("send");
    assert!(closed(&mut s), "an ACK from a sender closes the connection");

    // Acknowledgements without wall-clock record times.
    let mut s = connect(&app.addr);
    let r = sender::handshake(&mut s, &hello(5, 1, control::HELLO_ACKS_WANTED));
    assert!(r.is_err(), "{r:?}");

    // An old connection of a sender that connected again (its HELLO
    // replayed by another party, or a half-open socket): the old one is
    // closed at its next frame.
    let mut old = connect(&app.addr);
    sender::handshake(&mut old, &hello(6, 1, ACKED)).expect("welcome");
    old.write_all(&data(1, 5)).expect("send");
    // Frame 1 is taken (acknowledged) before the sender connects again.
    wait_for_ack(&mut old, 1);
    let mut new = connect(&app.addr);
    let w = sender::handshake(&mut new, &hello(6, 2, ACKED)).expect("welcome");
    assert_eq!(w.durable_seq, 1);
    std::thread::sleep(Duration::from_millis(100));
    let _ = old.write_all(&data(2, 5));
    assert!(closed(&mut old), "the superseded connection is closed");
    new.write_all(&data(2, 5)).expect("send");
    wait_for_ack(&mut new, 2);

    good.write_all(&data(2, 5)).expect("send");
    wait_for_ack(&mut good, 2);
    drop((good, new));
    let stats = stop(app);
    assert_eq!(stat(&stats, "bad_connections"), 5, "{stats}");
    // good: 10; sender 2: 5 (frame 7); sender 6: 5 + 5.
    assert_eq!(stat(&stats, "ingested"), 25, "{stats}");
}
