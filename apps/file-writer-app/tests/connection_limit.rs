//! `serve`'s bound on open connections: beyond it a connection is closed at
//! once and counted, and a place freed by a closed connection is taken by
//! the next one.

use std::io::{ErrorKind, Read};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use file_writer_app::FileWriter;

/// True when the server closed `s` (EOF or reset) within `wait`.
fn closed_by_server(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).expect("timeout");
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(_) => true,
    }
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn connections_beyond_the_limit_are_closed_and_a_freed_place_is_taken() {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = Arc::new(FileWriter::create(&dir.path().join("out.frames")).expect("create"));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    {
        let w = writer.clone();
        std::thread::spawn(move || w.serve(listener, None, 2));
    }
    let mut a = TcpStream::connect(addr).expect("a");
    let mut b = TcpStream::connect(addr).expect("b");
    assert!(!closed_by_server(&mut a, Duration::from_millis(200)));
    assert!(!closed_by_server(&mut b, Duration::from_millis(200)));

    let mut c = TcpStream::connect(addr).expect("c");
    assert!(
        closed_by_server(&mut c, Duration::from_secs(5)),
        "the third connection stays open"
    );
    assert_eq!(writer.received.refused.load(Ordering::Relaxed), 1);

    // Closing `a` ends its thread; the next connection gets its place.
    drop(a);
    let mut d = None;
    wait_for("a freed place", || {
        let mut s = TcpStream::connect(addr).expect("d");
        if closed_by_server(&mut s, Duration::from_millis(300)) {
            false
        } else {
            d = Some(s);
            true
        }
    });
    assert!(d.is_some());
    assert!(
        !closed_by_server(&mut b, Duration::from_millis(100)),
        "b was closed"
    );
}
