//! The syscall-latency probe really loads and measures `pread64`.
//!
//! Runs as root (CI does). A child process (the test-support binary
//! `probes-pread-child`, `tests/support/pread_child.rs`) makes
//! `FAST + SLOW_AT.len()` `pread64` calls on one thread. The slow ones are slow inside the syscall itself: they read into a
//! page registered with userfaultfd, so the kernel's copy to user space faults
//! and waits until a handler thread of the child resolves the fault after
//! `SLOW_DELAY`. (pread64 on pipes, sockets or eventfds fails at once with
//! ESPIPE, and disk reads are too fast and too variable to rank reliably.)

#[path = "support/pread_plan.rs"]
mod pread_plan;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use pread_plan::{total_calls, SLOW_AT, SLOW_DELAY};
use probes::{ProbeConfig, ProbeEvent, ProbeHandle, SYS_PREAD64};

#[test]
fn pread64_latencies_rank_slow_calls_first_and_only_the_target_is_traced() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_probes-pread-child"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let child_pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().expect("child stdout")).lines();
    let worker_tid: u32 = loop {
        let line = lines
            .next()
            .expect("child exited before READY")
            .expect("read child");
        if let Some(rest) = line.strip_prefix("READY ") {
            break rest.trim().parse().expect("tid");
        }
    };

    let (tx, rx) = crossbeam_channel::bounded(1 << 16);
    let config = ProbeConfig {
        syscalls: true,
        page_cache: false,
        target_tgid: Some(child_pid),
        ..ProbeConfig::default()
    };
    let probes = ProbeHandle::start(config, tx).unwrap_or_else(|e| panic!("probes: {e}"));

    // Go.
    let mut stdin = child.stdin.take().expect("child stdin");
    stdin.write_all(b"go\n").expect("signal child");
    drop(stdin);
    let status = child.wait().expect("wait child");
    assert!(status.success(), "child failed: {status}");
    std::thread::sleep(Duration::from_millis(50));
    let stats = probes.stop().expect("stop probes");

    let mut events = Vec::new();
    for batch in rx.try_iter() {
        for e in batch {
            if let ProbeEvent::Syscall(s) = e {
                events.push(s);
            }
        }
    }
    assert_eq!(stats.kernel_drops(), 0, "{stats:?}");
    assert_eq!(stats.channel_drops, 0, "{stats:?}");
    assert!(!events.is_empty(), "no syscall events: {stats:?}");
    let strangers: Vec<_> = events.iter().filter(|e| e.pid != child_pid).collect();
    assert!(
        strangers.is_empty(),
        "events of other processes: {:?}",
        &strangers[..strangers.len().min(5)]
    );

    let mut preads: Vec<_> = events
        .iter()
        .filter(|e| e.nr == SYS_PREAD64 && e.tid == worker_tid)
        .copied()
        .collect();
    assert!(
        preads.len() >= total_calls(),
        "only {} pread64 events of {}",
        preads.len(),
        total_calls()
    );
    preads.sort_by_key(|e| e.start_ns);
    // Our calls are the last ones the worker made.
    let ours = &preads[preads.len() - total_calls()..];
    let mut by_duration: Vec<usize> = (0..ours.len()).collect();
    by_duration.sort_by_key(|&i| std::cmp::Reverse(ours[i].duration_ns));
    let mut slowest: Vec<usize> = by_duration[..SLOW_AT.len()].to_vec();
    slowest.sort_unstable();
    assert_eq!(slowest, SLOW_AT, "slowest calls are not the slow ones");
    for &i in &SLOW_AT {
        assert!(
            ours[i].duration_ns >= SLOW_DELAY.as_nanos() as u64 * 3 / 4,
            "slow call {i} took only {} ns",
            ours[i].duration_ns
        );
    }
}
