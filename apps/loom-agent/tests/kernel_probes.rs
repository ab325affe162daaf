//! Real kernel, real probes (root): block I/O of O_DIRECT writes, run-queue
//! waits of two threads sharing one CPU, and per-syscall counts equal to
//! Debian's bpftrace counting the same child at the same time.

mod support;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::Rng;
use support::harness::{Agent, App, Lines, Traced};

fn name(prefix: &str) -> String {
    format!("{prefix}{}", rand::thread_rng().gen_range(1000..9999))
}

#[test]
fn o_direct_writes_show_as_blockio_bytes_of_the_writer() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let comm = name("lbio");
    // /var/tmp sits on a block device here (tmpfs has no block I/O).
    let dir = tempfile::tempdir_in("/var/tmp").expect("temp dir on disk");
    let file = dir.path().join("direct");
    let mib = 8u64;
    let mut child = Traced::spawn(&comm, &["direct", file.to_str().unwrap(), &mib.to_string()]);
    let pid = child.pid.to_string();
    let agent = Agent::start(&app.addr, &["--pid", &pid, "--blockio"]);
    child.go();
    child.done();
    std::thread::sleep(Duration::from_millis(300));
    let s = agent.stop();
    assert_eq!(s["kernel_drops"], 0, "{s:?}");
    let bytes = app.settled(&format!(
        "SELECT sum(bytes) FROM blockio WHERE comm = '{comm}' AND op = 'write'"
    ));
    assert!(
        bytes >= mib << 20,
        "blockio bytes {bytes} < {mib} MiB written with O_DIRECT"
    );
    let max = app.number(&format!(
        "SELECT max(latency_us) FROM blockio WHERE comm = '{comm}'"
    ));
    assert!(max > 0, "block requests take time");
    child.finish();
}

#[test]
fn two_busy_threads_on_one_cpu_both_wait_on_the_run_queue() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let comm = name("lrq");
    let mut child = Traced::spawn(&comm, &["spin", "1500"]);
    let pid = child.pid.to_string();
    let agent = Agent::start(&app.addr, &["--pid", &pid, "--runqueue"]);
    child.go();
    let tids: Vec<u32> = child
        .done()
        .iter()
        .filter_map(|l| l.strip_prefix("TID ")?.trim().parse().ok())
        .collect();
    assert_eq!(tids.len(), 2);
    std::thread::sleep(Duration::from_millis(300));
    let s = agent.stop();
    assert_eq!(s["kernel_drops"], 0, "{s:?}");
    app.settled(&format!(
        "SELECT count(latency_us) FROM runqueue WHERE comm = '{comm}'"
    ));
    for tid in tids {
        let n = app.number(&format!(
            "SELECT count(latency_us) FROM runqueue WHERE comm = '{comm}' AND tid = {tid}"
        ));
        assert!(
            n > 0,
            "thread {tid} sharing CPU 0 never waited on the run queue"
        );
    }
    child.finish();
}

/// bpftrace's count of the child's completed syscalls by number (those
/// whose entry it saw, as the agent does).
fn bpftrace(pid: u32) -> (std::process::Child, Lines) {
    let prog = format!(
        "tracepoint:raw_syscalls:sys_enter /pid == {pid}/ {{ @s[tid] = 1; }} \
         tracepoint:raw_syscalls:sys_exit /pid == {pid} && @s[tid]/ {{ @n[args->id] = count(); delete(@s[tid]); }} \
         END {{ clear(@s); }}"
    );
    let mut c = Command::new("bpftrace")
        .args(["-e", &prog])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bpftrace is missing: run scripts/install-deps.sh (Debian package bpftrace)");
    let lines = Lines::of(c.stdout.take().expect("stdout"));
    lines.wait_for("Attaching", Duration::from_secs(60));
    (c, lines)
}

#[test]
fn per_syscall_counts_equal_bpftrace() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let comm = name("lbpf");
    let k = rand::thread_rng().gen_range(1_000..10_000u64);
    let mut child = Traced::spawn(&comm, &["preads", &k.to_string()]);
    let pid = child.pid.to_string();
    let (mut bt, bt_lines) = bpftrace(child.pid);
    let agent = Agent::start(&app.addr, &["--pid", &pid, "--syscalls"]);
    child.go();
    child.done();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill with a valid pid and signal.
    unsafe { libc::kill(bt.id() as i32, libc::SIGINT) };
    let _ = bt.wait();
    let s = agent.stop();
    assert_eq!(s["kernel_drops"] + s["queue_drops"], 0, "{s:?}");
    let want: BTreeMap<u32, u64> = bt_lines
        .rest()
        .iter()
        .filter_map(|l| {
            let (k, v) = l.strip_prefix("@n[")?.split_once("]: ")?;
            Some((k.parse().ok()?, v.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(
        want.get(&17),
        Some(&k),
        "bpftrace saw the K pread64 calls: {want:?}"
    );
    app.settled(&format!(
        "SELECT count(duration_us) FROM syscall WHERE comm = '{comm}'"
    ));
    for (nr, n) in &want {
        let got = app.number(&format!(
            "SELECT count(duration_us) FROM syscall WHERE comm = '{comm}' AND nr = '{nr}'"
        ));
        assert_eq!(got, *n, "syscall {nr}: loom {got}, bpftrace {n}");
    }
    let total = app.number(&format!(
        "SELECT count(duration_us) FROM syscall WHERE comm = '{comm}'"
    ));
    assert_eq!(
        total,
        want.values().sum::<u64>(),
        "no syscall bpftrace did not see"
    );
    child.finish();
}
