//! The packet probe really loads at tcx ingress of loopback and sees exactly
//! the TCP packets of the watched port: a loopback echo on that port yields
//! events in both directions with the payload lengths, traffic to another
//! loopback port yields none, and detaching leaves no tcx program behind.
//! Runs as root (CI does).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Duration;

use probes::{PacketEvent, ProbeConfig, ProbeEvent, ProbeHandle};

/// Bytes each side sends per message.
const MESSAGE: usize = 100;
/// Messages exchanged on each connection.
const MESSAGES: usize = 20;

/// Sends `MESSAGES` messages over a fresh connection to `listener` and reads
/// each one back (the listener's thread echoes).
fn echo_exchange(listener: TcpListener) {
    let addr = listener.local_addr().expect("local addr");
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut buf = [0u8; MESSAGE];
        for _ in 0..MESSAGES {
            s.read_exact(&mut buf).expect("server read");
            s.write_all(&buf).expect("server write");
        }
    });
    let mut c = TcpStream::connect(addr).expect("connect");
    c.set_nodelay(true).expect("nodelay");
    let mut buf = [7u8; MESSAGE];
    for _ in 0..MESSAGES {
        c.write_all(&buf).expect("client write");
        c.read_exact(&mut buf).expect("client read");
    }
    drop(c);
    server.join().expect("echo server");
}

fn mapped_loopback() -> [u8; 16] {
    Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets()
}

#[test]
fn loopback_packets_of_the_watched_port_only() {
    let watched = TcpListener::bind("127.0.0.1:0").expect("bind watched");
    let other = TcpListener::bind("127.0.0.1:0").expect("bind other");
    let port = watched.local_addr().expect("addr").port();
    let other_port = other.local_addr().expect("addr").port();

    let (tx, rx) = crossbeam_channel::bounded(1 << 16);
    let config = ProbeConfig {
        syscalls: false,
        packets: Some(port),
        ..ProbeConfig::default()
    };
    let probes = ProbeHandle::start(config, tx)
        .unwrap_or_else(|e| panic!("packet probe (needs root and Linux 6.6+ for tcx): {e}"));
    echo_exchange(other);
    echo_exchange(watched);
    std::thread::sleep(Duration::from_millis(100));
    let stats = probes.stop().expect("stop probes");

    let events: Vec<PacketEvent> = rx
        .try_iter()
        .flatten()
        .filter_map(|e| match e {
            ProbeEvent::Packet(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(stats.kernel_drops(), 0, "{stats:?}");
    assert_eq!(stats.packet_events, events.len() as u64);
    assert!(
        events
            .iter()
            .all(|e| e.src_port == port || e.dst_port == port),
        "an event of another port: {:?}",
        events
            .iter()
            .find(|e| e.src_port != port && e.dst_port != port)
    );
    assert!(
        !events
            .iter()
            .any(|e| e.src_port == other_port || e.dst_port == other_port),
        "traffic of the unwatched port {other_port} was captured"
    );
    let lo = mapped_loopback();
    assert!(events.iter().all(|e| e.src_addr == lo && e.dst_addr == lo));
    // Frames carrying a message: Ethernet 14 + IPv4 20 + TCP (20 + options) + 100.
    let carrying = |to_server: bool| {
        events
            .iter()
            .filter(|e| (e.dst_port == port) == to_server)
            .filter(|e| e.length as usize >= MESSAGE + 54)
            .count()
    };
    assert!(carrying(true) >= MESSAGES, "requests: {events:?}");
    assert!(carrying(false) >= MESSAGES, "replies: {events:?}");
    assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));

    // The tcx link went with the handle, and the program with it (older
    // bpftool releases do not list tcx links under `net show`, so look for
    // the program itself).
    let out = std::process::Command::new("bpftool")
        .args(["prog", "show", "name", "handle_ingress"])
        .output();
    if let Ok(out) = out {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("handle_ingress"), "still loaded:\n{text}");
    }
}
