//! A live 15 s P3 run (requests + the server's syscalls + its port's packets)
//! into a recording file, while other loopback traffic flows on a port of
//! the test's own:
//! - every request the workload counted is exactly one KV op record in the file;
//! - syscall records are the server process's;
//! - packet records are all the server port's (both directions) and none
//!   belong to the other port.
//!
//! Needs root (the probes load into the kernel) and redis-server or
//! valkey-server in PATH.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use telemetry::Record;
use valkey_workload::{Destination, WorkloadConfig};

#[test]
fn every_request_is_one_kv_record_and_packets_are_the_server_ports_only() {
    common::require_root_and_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("valkey-p3");
    let side = common::SideTraffic::start();
    let other_port = side.port;

    let config = WorkloadConfig {
        records: 20_000,
        clients: 4,
        duration: Duration::from_secs(15),
        warmup: Duration::from_secs(1),
        syscalls: true,
        packets: true,
        destination: Destination::Recording(path.clone()),
        ..WorkloadConfig::default()
    };
    let mut lines = 0;
    let summary = valkey_workload::run(config, &AtomicBool::new(false), |_| lines += 1, |_| {})
        .unwrap_or_else(|e| panic!("workload: {e}"));
    let side_messages = side.stop();
    eprintln!("{summary:?}");
    assert!(side_messages > 0, "the side traffic did not flow");
    assert!((14..=16).contains(&lines), "{lines} progress lines");

    let (header, batches) = common::read_recording(&path);
    assert_eq!(
        (header.workload.as_str(), header.phase.as_str()),
        ("valkey", "p3")
    );
    assert!(!header.synthetic);
    let (mut kv, mut sys, mut pkt) = (Vec::new(), Vec::new(), Vec::new());
    for b in &batches {
        for r in &b.records {
            match r {
                Record::KvOp(k) => kv.push(*k),
                Record::Syscall(s) => sys.push(*s),
                Record::Packet(p) => pkt.push(*p),
                other => panic!("only KV, syscall and packet probes run: {other:?}"),
            }
        }
    }

    // Requests counted = KV records received.
    assert!(summary.run.recorded > 10_000, "{summary:?}");
    assert_eq!(summary.run.app_dropped, 0, "{summary:?}");
    assert_eq!(summary.run.kv_sent, summary.run.recorded, "{summary:?}");
    assert_eq!(kv.len() as u64, summary.run.recorded, "{summary:?}");
    assert!(kv.iter().all(|k| k.thread_id < 4));

    // The server's syscalls, its replies among them (write or sendto).
    assert_eq!(sys.len() as u64, summary.run.syscall_sent);
    assert!(!sys.is_empty());
    assert!(
        sys.iter().all(|s| s.pid == summary.server_pid),
        "a syscall of another process"
    );
    assert!(
        sys.iter().any(|s| s.nr == 1 || s.nr == 44),
        "no reply syscall"
    );

    // The server port's packets, both directions, and nothing else.
    assert_eq!(pkt.len() as u64, summary.run.packet_sent);
    let port = summary.port;
    assert!(
        pkt.len() as u64 >= summary.run.recorded,
        "fewer packets than requests: {}",
        pkt.len()
    );
    assert!(pkt.iter().all(|p| p.src_port == port || p.dst_port == port));
    assert!(pkt.iter().any(|p| p.dst_port == port) && pkt.iter().any(|p| p.src_port == port));
    assert!(
        !pkt.iter()
            .any(|p| p.src_port == other_port || p.dst_port == other_port),
        "packets of the other port {other_port} were captured"
    );
    assert_eq!(summary.run.probes.kernel_drops(), 0, "{summary:?}");
}
