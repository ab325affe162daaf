//! Real kernel, real probes (root): a child makes exactly K pread64 calls
//! (K random per run) and is selected by --pid (per-syscall and raw
//! attachment), --comm, --cgroup and --all; loom-app stores exactly K for
//! it, tagged with its name and host, and nothing of a concurrent noise
//! process with another name and cgroup, except under --all.

mod support;

use rand::Rng;
use support::harness::{lost, Agent, App, Traced};

fn count(app: &App, comm: &str) -> u64 {
    let host = telemetry::wire::sender::hostname();
    app.settled(&format!(
        "SELECT count(duration_us) FROM syscall WHERE name = 'pread64' AND comm = '{comm}' AND host = '{host}'"
    ))
}

struct Cgroup(std::path::PathBuf);

impl Cgroup {
    fn new(name: &str) -> Option<Cgroup> {
        let root = probes::agent::target::cgroup2_mounts().into_iter().next()?;
        let dir = root.join(name);
        std::fs::create_dir(&dir).ok()?;
        Some(Cgroup(dir))
    }

    fn add(&self, pid: u32) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).expect("move into the cgroup");
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Empty once its processes exited; removal can lag the exit a little.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

#[test]
fn each_selection_stores_exactly_the_targets_calls() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let mut rng = rand::thread_rng();
    for mode in ["pid", "pid-raw", "comm", "cgroup", "all"] {
        let tag: u32 = rng.gen_range(1000..9999);
        let (tname, nname) = (format!("ltgt{tag}"), format!("lnoise{tag}"));
        let (k, k_noise) = (
            rng.gen_range(1_000..20_000u64),
            rng.gen_range(1_000..20_000u64),
        );
        let mut target = Traced::spawn(&tname, &["preads", &k.to_string()]);
        let mut noise = Traced::spawn(&nname, &["preads", &k_noise.to_string()]);
        let cg = (mode == "cgroup").then(|| {
            let c = Cgroup::new(&format!("loom-agent-test-{tag}"))
                .expect("cannot make a cgroup v2 directory (cgroup2 mounted?)");
            c.add(target.pid);
            c
        });
        let pid = target.pid.to_string();
        let cg_path = cg
            .as_ref()
            .map(|c| c.0.display().to_string())
            .unwrap_or_default();
        let select: Vec<&str> = match mode {
            "pid" => vec!["--pid", &pid],
            "pid-raw" => vec!["--pid", &pid, "--syscall-attach", "raw"],
            "comm" => vec!["--comm", &tname],
            "cgroup" => vec!["--cgroup", &cg_path],
            _ => vec!["--all"],
        };
        let mut args = vec!["--syscalls", "pread64"];
        args.extend(select);
        let agent = Agent::start(&app.addr, &args);
        target.go();
        noise.go();
        target.done();
        noise.done();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let s = agent.stop();
        let lost = lost(&s);
        assert_eq!(lost, 0, "{mode}: {s:?}");
        assert_eq!(count(&app, &tname), k, "{mode}: the target's pread64 calls");
        let want_noise = if mode == "all" { k_noise } else { 0 };
        assert_eq!(count(&app, &nname), want_noise, "{mode}: the noise process");
        target.finish();
        noise.finish();
        drop(cg);
    }
}

#[test]
fn a_tiny_ring_buffer_counts_every_lost_event() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let tag: u32 = rand::thread_rng().gen_range(1000..9999);
    let name = format!("lstorm{tag}");
    let k = 300_000u64;
    let mut child = Traced::spawn(&name, &["preads", &k.to_string()]);
    let pid = child.pid.to_string();
    let agent = Agent::start(
        &app.addr,
        &[
            "--pid",
            &pid,
            "--syscalls",
            "pread64",
            "--ring-buffer-bytes",
            "4096",
        ],
    );
    child.go();
    child.done();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let s = agent.stop();
    let stored = count(&app, &name);
    let lost = lost(&s);
    assert!(
        s["kernel_drops"] > 0,
        "a 4 KiB ring buffer under a storm must overflow: {s:?}"
    );
    assert_eq!(
        stored + lost,
        k,
        "stored {stored} + counted drops {lost}: {s:?}"
    );
    child.finish();
}

/// The probes remember whether a task is a target (name and cgroup
/// targets); a task that renames itself or moves to another cgroup must
/// be judged again: its calls count only while it is a target.
#[test]
fn a_target_that_renames_itself_or_leaves_its_cgroup_is_judged_again() {
    let Some(app) = App::ready(&[]) else {
        return;
    };
    let mut rng = rand::thread_rng();
    let root = probes::agent::target::cgroup2_mounts()
        .into_iter()
        .next()
        .expect("cgroup v2 mounted");
    for mode in ["comm", "comm-raw", "cgroup"] {
        let tag: u32 = rng.gen_range(1000..9999);
        let (tname, other) = (format!("lren{tag}"), format!("lout{tag}"));
        let [k1, k2, k3] = [(); 3].map(|_| rng.gen_range(500..5_000u64));
        let cg = (mode == "cgroup").then(|| {
            Cgroup::new(&format!("loom-agent-rejudge-{tag}"))
                .expect("cannot make a cgroup v2 directory (cgroup2 mounted?)")
        });
        let (leave, back) = match &cg {
            Some(c) => (
                format!("c:{}", root.display()),
                format!("c:{}", c.0.display()),
            ),
            None => (format!("n:{other}"), format!("n:{tname}")),
        };
        let steps = [
            "steps".to_string(),
            format!("p:{k1}"),
            leave,
            format!("p:{k2}"),
            back,
            format!("p:{k3}"),
        ];
        let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
        let mut child = Traced::spawn(&tname, &steps);
        if let Some(c) = &cg {
            c.add(child.pid);
        }
        let cg_path = cg
            .as_ref()
            .map(|c| c.0.display().to_string())
            .unwrap_or_default();
        let mut args = vec!["--syscalls", "pread64"];
        args.extend(match mode {
            "comm" => vec!["--comm", &tname],
            "comm-raw" => vec!["--comm", &tname, "--syscall-attach", "raw"],
            _ => vec!["--cgroup", &cg_path],
        });
        let agent = Agent::start(&app.addr, &args);
        child.go();
        child.done();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let s = agent.stop();
        let lost = lost(&s);
        assert_eq!(lost, 0, "{mode}: {s:?}");
        assert_eq!(
            count(&app, &tname),
            k1 + k3,
            "{mode}: only the calls made while a target ({k1} + {k3}, not {k2})"
        );
        assert_eq!(count(&app, &other), 0, "{mode}: under the other name");
        child.finish();
        drop(cg);
    }
}
