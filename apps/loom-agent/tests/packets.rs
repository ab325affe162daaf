//! Real kernel, real probe (root): `--packets lo:PORT` stores exactly the
//! UDP datagrams sent to PORT over loopback (each passes lo's TC ingress
//! once), not those to another port, and counts them in the `agent`
//! measurement.

mod support;

use std::net::UdpSocket;
use std::time::Duration;

use rand::Rng;
use support::harness::{probes_can_run, Agent, App};

#[test]
fn packets_to_the_port_are_stored_exactly_and_others_are_not() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let target = UdpSocket::bind("127.0.0.1:0").expect("bind the target port");
    let other = UdpSocket::bind("127.0.0.1:0").expect("bind another port");
    let sender = UdpSocket::bind("127.0.0.1:0").expect("bind the sender");
    let port = target.local_addr().unwrap().port();
    let iface = format!("lo:{port}");
    let agent = Agent::start(&app.addr, &["--packets", &iface, "--host", "pk-host"]);

    let mut rng = rand::thread_rng();
    let (k, noise) = (rng.gen_range(200..600u64), rng.gen_range(100..300u64));
    let payload = [7u8; 100];
    for i in 0..k.max(noise) {
        if i < k {
            sender
                .send_to(&payload, target.local_addr().unwrap())
                .unwrap();
        }
        if i < noise {
            sender
                .send_to(&payload[..40], other.local_addr().unwrap())
                .unwrap();
        }
        if i % 50 == 0 {
            // Keep the receive buffers from overflowing (not that it
            // matters: ingress sees a datagram before any socket does).
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let s = agent.stop();
    assert_eq!(s["packet_kernel_drops"], 0, "{s:?}");
    assert_eq!(
        s["packet_events"], k,
        "the probe saw only the target port's: {s:?}"
    );

    let stored = app.settled("SELECT count(length) FROM packet WHERE host = 'pk-host'");
    assert_eq!(stored, k, "{k} datagrams sent to port {port}");
    let to_port = app.number(&format!(
        "SELECT count(length) FROM packet WHERE dst_port = {port}"
    ));
    assert_eq!(to_port, k);
    let other_port = other.local_addr().unwrap().port();
    let leaked = app.number(&format!(
        "SELECT count(length) FROM packet WHERE dst_port = {other_port}"
    ));
    assert_eq!(
        leaked, 0,
        "packets to another port were filtered in the kernel"
    );
    // IPv4 over lo: 14 (Ethernet) + 20 (IP) + 8 (UDP) + 100.
    let len = app.number("SELECT max(length) FROM packet WHERE host = 'pk-host'");
    assert_eq!(len, 142);
    let counted =
        app.settled("SELECT sum(events) FROM agent WHERE probe = 'packet' AND stage = 'kernel'");
    assert_eq!(
        counted, k,
        "the agent measurement counts the probe's events"
    );
}

#[test]
fn a_missing_interface_is_named_in_the_error() {
    if !probes_can_run() {
        return;
    }
    let out = std::process::Command::new(support::harness::sibling("loom-agent"))
        .args([
            "--to",
            "127.0.0.1:9",
            "--packets",
            "nosuchif0:80",
            "--duration-s",
            "1",
        ])
        .output()
        .expect("run loom-agent");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nosuchif0"), "{err}");
}
