//! Real kernel, real probes (root): the syscall probe's attachment modes.
//! With fentry/fexit on the syscall functions a child's K pread64 calls
//! are stored, each at its own time (matched one to one with the child's
//! own log), and none of its other syscalls (the writes of that log, its
//! reads of stdin) although they are made by the same target; and the mode
//! the agent took, with the reason when `auto` falls back, is reported on
//! its "attached" line.

mod support;

use std::process::Command;

use rand::Rng;
use support::harness::{assert_each_inside_its_call, calls_of, lost, sibling, Agent, App, Traced};

const SLACK_US: u64 = 2_000;

/// Why this kernel cannot run fentry programs, if it cannot: the agent's
/// own refusal, which names the reason.
fn fentry_refused(app: &App) -> Option<String> {
    let pid = std::process::id().to_string();
    let out = Command::new(sibling("loom-agent"))
        .args(["--to", &app.addr, "--pid", &pid, "--syscalls", "pread64"])
        .args(["--syscall-attach", "fentry", "--duration-s", "0.1"])
        .output()
        .expect("run loom-agent");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return None;
    }
    assert!(
        stderr.contains("refuses fentry") || stderr.contains("no function"),
        "loom-agent --syscall-attach fentry failed for another reason: {stderr}"
    );
    Some(stderr.lines().last().unwrap_or_default().to_string())
}

#[test]
fn fentry_stores_the_listed_calls_at_their_times_and_nothing_else() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    if let Some(why) = fentry_refused(&app) {
        eprintln!("skipped: {why}");
        return;
    }
    let mut rng = rand::thread_rng();
    let name = format!("lfent{}", rng.gen_range(1000..9999));
    let k: u64 = rng.gen_range(2_000..10_000);
    let mut child = Traced::spawn(&name, &["preads", &k.to_string()]);
    let pid = child.pid.to_string();
    let agent = Agent::start(
        &app.addr,
        &[
            "--pid",
            &pid,
            "--syscalls",
            "pread64",
            "--syscall-attach",
            "fentry",
        ],
    );
    assert!(
        agent.attached.contains("syscalls: fentry (1 syscalls)"),
        "{}",
        agent.attached
    );
    child.go();
    let log = child.done();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let s = agent.stop();
    let lost = lost(&s);
    assert_eq!(lost, 0, "{s:?}");
    let calls = calls_of(&log);
    assert_eq!(calls.len() as u64, k, "the child logged every call");
    let host = telemetry::wire::sender::hostname();
    let of_child = format!("comm = '{name}' AND host = '{host}'");
    let stored = app.settled(&format!(
        "SELECT count(duration_us) FROM syscall WHERE name = 'pread64' AND {of_child}"
    ));
    assert_eq!(stored, k, "the child's pread64 calls");
    // The child wrote its log (write) and read stdin (read) while a target:
    // not on the list, so not stored.
    let any = app.number(&format!(
        "SELECT count(duration_us) FROM syscall WHERE {of_child}"
    ));
    assert_eq!(any, k, "only pread64 of the child is stored");
    let mut times = app.times_us(&format!(
        "SELECT duration_us FROM syscall WHERE name = 'pread64' AND {of_child}"
    ));
    times.sort_unstable();
    assert_eq!(times.len() as u64, k);
    assert_each_inside_its_call(&times, &calls, SLACK_US);
    child.finish();
}

#[test]
fn the_attachment_taken_is_reported_with_the_reason_of_a_fallback() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let refused = fentry_refused(&app);
    let one = ["--pid", "1", "--syscalls", "pread64"];
    // 33 names: one more than the fentry slots.
    let long = "read,write,open,close,stat,fstat,lstat,poll,lseek,mmap,mprotect,munmap,brk,\
                ioctl,pread64,pwrite64,readv,writev,access,pipe,select,sched_yield,mremap,\
                msync,mincore,madvise,dup,dup2,pause,nanosleep,getitimer,alarm,setitimer";
    assert_eq!(long.split(',').count(), 33);
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            one.to_vec(),
            match &refused {
                None => "syscalls: fentry (1 syscalls)".into(),
                Some(_) => {
                    "syscalls: per-syscall tracepoints, not fentry: the kernel refuses".into()
                }
            },
        ),
        (
            vec!["--pid", "1", "--syscalls", long],
            "syscalls: per-syscall tracepoints, not fentry: the fentry mode attaches at most 32 \
             syscalls, the list has 33"
                .into(),
        ),
        (
            [&one[..], &["--syscall-attach", "tracepoint"]].concat(),
            "syscalls: per-syscall tracepoints),".into(),
        ),
        (
            [&one[..], &["--syscall-attach", "raw"]].concat(),
            "syscalls: raw_syscalls),".into(),
        ),
        (
            vec!["--pid", "1", "--syscalls"],
            "syscalls: raw_syscalls),".into(),
        ),
    ];
    for (args, want) in cases {
        let agent = Agent::start(&app.addr, &args);
        assert!(
            agent.attached.contains(&want),
            "{args:?}: {:?} lacks {want:?}",
            agent.attached
        );
        agent.stop();
    }
    // fentry for every syscall is refused, naming the limit.
    let out = Command::new(sibling("loom-agent"))
        .args(["--to", &app.addr, "--pid", "1", "--syscalls"])
        .args(["--syscall-attach", "fentry", "--duration-s", "0.1"])
        .output()
        .expect("run loom-agent");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--syscall-attach fentry needs a syscall list (at most 32)"),
        "{stderr}"
    );
}
