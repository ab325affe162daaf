//! Real kernel, real probes (root): loom-app is SIGKILLed and restarted
//! on its store while the agent streams a child's pread64 calls. The agent
//! reconnects and resends what loom-app had not acknowledged: stored +
//! counted drops = the calls the child made, and every stored record is at
//! its own event time — matched one to one, in order, with the child's own
//! log of when it made each call (wall clock before and after the call).

mod support;

use std::time::Duration;

use rand::Rng;
use support::harness::{
    assert_each_inside_its_call, calls_of, lost, probes_can_run, Agent, App, Traced,
};

/// Kernel and user-space clocks: the agent maps the kernel's monotonic
/// event time onto the wall clock once at start; the child reads the wall
/// clock around each call. They agree to within this.
const SLACK_US: u64 = 2_000;

#[test]
fn loom_app_killed_mid_run_loses_nothing_and_moves_nothing() {
    if !probes_can_run() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let addr = format!("127.0.0.1:{}", testing::free_port());
    let app = App::start_on(&store, &addr, &[]);
    let mut rng = rand::thread_rng();
    let tag: u32 = rng.gen_range(1000..9999);
    let name = format!("lrst{tag}");
    // About 4 s of calls, 200 µs apart; loom-app dies somewhere in them.
    let k: u64 = rng.gen_range(12_000..16_000);
    let kill_after_ms: u64 = rng.gen_range(500..2_500);
    println!("K = {k} calls, loom-app killed after {kill_after_ms} ms");
    let mut child = Traced::spawn(&name, &["preads", &k.to_string(), "200"]);
    let pid = child.pid.to_string();
    let agent = Agent::start(&app.addr, &["--pid", &pid, "--syscalls", "pread64"]);
    child.go();
    std::thread::sleep(Duration::from_millis(kill_after_ms));
    app.kill();
    std::thread::sleep(Duration::from_millis(300));
    let app = App::start_on(&store, &addr, &[]);
    let log = child.done();
    // Let the agent's last frames be acknowledged before it stops.
    std::thread::sleep(Duration::from_millis(1500));
    let s = agent.stop();
    println!("{s:?}");
    assert!(s["connections"] >= 2, "the agent reconnected: {s:?}");
    let lost = lost(&s);

    let calls = calls_of(&log);
    assert_eq!(calls.len() as u64, k, "the child logged every call");
    let host = telemetry::wire::sender::hostname();
    let q = format!(
        "SELECT duration_us FROM syscall WHERE name = 'pread64' AND comm = '{name}' AND host = '{host}'"
    );
    let count = app.settled(&format!(
        "SELECT count(duration_us) FROM syscall WHERE name = 'pread64' AND comm = '{name}' AND host = '{host}'"
    ));
    assert_eq!(
        count + lost,
        k,
        "stored {count} + counted drops {lost}: {s:?}"
    );
    let mut times = app.times_us(&q);
    times.sort_unstable();
    assert_eq!(times.len() as u64, count);
    // One to one, in order: each stored record inside its own call.
    assert_each_inside_its_call(&times, &calls, SLACK_US);
    child.finish();
}
