//! The server never outlives the workload: dropped, interrupted with Ctrl-C
//! (SIGINT) mid-run, or failing at start, it is gone afterwards and the
//! error says what happened. No probes: runs without root, but needs
//! redis-server or valkey-server in PATH.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use valkey_workload::{Server, WorkloadError};

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn require_server() {
    let found = ["valkey-server", "redis-server"].iter().any(|name| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
    });
    assert!(
        found,
        "no valkey-server or redis-server in PATH: apt-get install redis-server"
    );
}

#[test]
fn dropping_the_server_stops_it_and_removes_its_directory() {
    require_server();
    let mut server = Server::start(None, None).unwrap_or_else(|e| panic!("start: {e}"));
    let pid = server.pid();
    assert!(server.is_running() && alive(pid));
    let dir = server.data_dir().to_path_buf();
    let text = std::fs::read_to_string(dir.join("valkey.conf")).expect("its own config file");
    for setting in ["bind 127.0.0.1", "save \"\"", "appendonly no"] {
        assert!(text.contains(setting), "{setting} missing in\n{text}");
    }
    drop(server);
    assert!(!alive(pid), "server {pid} still running");
    assert!(
        !dir.exists(),
        "data directory {} left behind",
        dir.display()
    );
}

#[test]
fn a_server_that_cannot_start_is_a_clear_error() {
    let err = Server::start(Some(std::path::Path::new("/bin/false")), None)
        .err()
        .expect("/bin/false is no server");
    match &err {
        WorkloadError::Server { detail, .. } => {
            assert!(detail.contains("exited at start"), "{err}")
        }
        other => panic!("unexpected error: {other}"),
    }
}

#[test]
fn ctrl_c_ends_the_run_cleanly_and_stops_the_server() {
    require_server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_valkey-workload"))
        .args([
            "--alternative-recording",
            "noop",
            "--records",
            "1000",
            "--clients",
            "2",
            "--warmup-seconds",
            "0",
            "--duration-seconds",
            "60",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start valkey-workload");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let mut server_pid = None;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        if let Some(pid) = line.split("(pid ").nth(1).and_then(|r| r.split(')').next()) {
            server_pid = pid.parse::<u32>().ok();
        }
        let progress = line.starts_with("Count: 1 ");
        lines.push(line);
        if progress {
            break;
        }
    }
    let pid = server_pid.unwrap_or_else(|| panic!("no server pid in {lines:?}"));
    assert!(alive(pid));
    // SAFETY: kill has no memory preconditions; the pid is our child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().expect("wait");
    reader.join().expect("reader");
    lines.extend(rx.try_iter());
    let all = lines.join("\n");
    assert!(status.success(), "{status}\n{all}");
    assert!(all.contains("interrupted: the run ended early"), "{all}");
    assert!(all.contains("Average valkey rate per sec: "), "{all}");
    assert!(!alive(pid), "server {pid} outlived the workload");
}
