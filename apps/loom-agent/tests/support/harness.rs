//! loom-agent's tests on top of the shared harness (`testing`, which
//! starts loom-app on port 0 and reads its ready file): the agent and
//! traced children as real processes, and InfluxQL questions over
//! loom-app's HTTP API.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Why a test cannot run here, if it cannot (not root, no BTF).
pub fn cannot_run() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (eBPF probes)".into());
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("needs kernel BTF (/sys/kernel/btf/vmlinux)".into());
    }
    None
}

/// Whether the probes can run here; when they cannot, says why on stderr
/// (the test is then skipped, passing).
pub fn probes_can_run() -> bool {
    match cannot_run() {
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
        None => true,
    }
}

/// A binary of this build (`target/<profile>/NAME`).
pub fn sibling(name: &str) -> PathBuf {
    testing::binary(name)
}

/// Lines of a child's stdout, read on a thread.
pub struct Lines(mpsc::Receiver<String>);

impl Lines {
    pub fn of(r: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(r).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Lines(rx)
    }

    /// The first line starting with `prefix` within `timeout`.
    pub fn wait_for(&self, prefix: &str, timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.0.recv_timeout(left) {
                Ok(l) if l.starts_with(prefix) => return l,
                Ok(_) => continue,
                Err(_) => panic!("no line starting with {prefix:?} within {timeout:?}"),
            }
        }
    }

    /// Every line until the stream ends.
    pub fn rest(&self) -> Vec<String> {
        self.0.iter().collect()
    }
}

/// A running loom-app with its own store.
pub struct App {
    app: testing::LoomApp,
    pub addr: String,
    pub http: String,
    _dir: Option<tempfile::TempDir>,
}

impl App {
    /// A loom-app for a probe test, or `None` (the reason printed) when
    /// the probes cannot run here.
    pub fn ready(extra: &[&str]) -> Option<App> {
        probes_can_run().then(|| App::start(extra))
    }

    pub fn start(extra: &[&str]) -> App {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut app = App::start_on(&dir.path().join("store"), "127.0.0.1:0", extra);
        app._dir = Some(dir);
        app
    }

    /// A loom-app on the store `store` listening on `addr` (a restart
    /// keeps both).
    pub fn start_on(store: &std::path::Path, addr: &str, extra: &[&str]) -> App {
        let app = testing::LoomApp::builder()
            .addr(addr)
            .no_otlp()
            .args(["--report-interval-s", "60"])
            .store(store)
            .args(extra.iter().copied())
            .start();
        App {
            addr: app.tcp(),
            http: app.http(),
            app,
            _dir: None,
        }
    }

    /// The body of `GET /query?q=…`.
    pub fn query(&self, q: &str) -> String {
        self.get(&format!("/query?q={}", encode(q)))
    }

    /// The times (µs since the Unix epoch) of the rows `q` answers, in order.
    pub fn times_us(&self, q: &str) -> Vec<u64> {
        let body = self.get(&format!("/query?epoch=u&q={}", encode(q)));
        let Some(i) = body.find("\"values\":[") else {
            assert!(!body.contains("error"), "{q}: {body}");
            return Vec::new();
        };
        body[i + "\"values\":[".len()..]
            .split('[')
            .filter_map(|row| row.split(',').next()?.trim().parse::<f64>().ok())
            .map(|t| t as u64)
            .collect()
    }

    fn get(&self, path: &str) -> String {
        let mut s = TcpStream::connect(&self.http).expect("connect to the HTTP API");
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or(body)
    }

    /// The single number a `SELECT count(…)`/`sum(…)` answers (0 when no rows).
    pub fn number(&self, q: &str) -> u64 {
        let body = self.query(q);
        let Some(i) = body.find("\"values\":[[") else {
            assert!(!body.contains("error"), "{q}: {body}");
            return 0;
        };
        let rest = &body[i + "\"values\":[[".len()..];
        let row = &rest[..rest.find(']').expect("row end")];
        let v = row.split(',').nth(1).expect("a value column").trim();
        v.parse::<f64>().map(|f| f as u64).unwrap_or(0)
    }

    /// Waits until `q`'s number stops changing (ingest caught up).
    pub fn settled(&self, q: &str) -> u64 {
        let mut last = u64::MAX;
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            std::thread::sleep(Duration::from_millis(1500));
            let n = self.number(q);
            if n == last || Instant::now() > end {
                return n;
            }
            last = n;
        }
    }

    pub fn kill(mut self) {
        self.app.process.kill();
    }
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A traced child (`loom-agent-test-child`).
pub struct Traced {
    child: Child,
    stdin: Option<ChildStdin>,
    pub pid: u32,
    pub lines: Lines,
}

impl Traced {
    pub fn spawn(name: &str, mode: &[&str]) -> Traced {
        let mut child = Command::new(sibling("loom-agent-test-child"))
            .arg(name)
            .args(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the child");
        let stdin = child.stdin.take();
        let lines = Lines::of(child.stdout.take().expect("stdout"));
        let l = lines.wait_for("READY ", Duration::from_secs(10));
        let pid = l["READY ".len()..].trim().parse().expect("pid");
        Traced {
            child,
            stdin,
            pid,
            lines,
        }
    }

    /// Lets it run its calls.
    pub fn go(&mut self) {
        let s = self.stdin.as_mut().expect("stdin");
        s.write_all(b"go\n").unwrap();
        s.flush().unwrap();
    }

    /// Waits for `DONE`, returning the lines before it.
    pub fn done(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let l = self
                .lines
                .0
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .expect("child DONE");
            if l == "DONE" {
                return out;
            }
            out.push(l);
        }
    }

    pub fn finish(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running loom-agent.
pub struct Agent {
    child: Child,
    pub lines: Lines,
    /// Its `loom-agent attached (syscalls: …) …` line.
    pub attached: String,
}

impl Agent {
    pub fn start(to: &str, args: &[&str]) -> Agent {
        let mut child = Command::new(sibling("loom-agent"))
            .args(["--to", to, "--report-interval-s", "60"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start loom-agent");
        let lines = Lines::of(child.stdout.take().expect("stdout"));
        let attached = lines.wait_for("loom-agent attached", Duration::from_secs(60));
        Agent {
            child,
            lines,
            attached,
        }
    }

    /// Stops it (SIGINT) and returns its `AGENT …` summary as key → value.
    pub fn stop(mut self) -> std::collections::HashMap<String, u64> {
        // SAFETY: kill with a valid pid and signal.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let status = self.child.wait().expect("agent exit");
        assert!(status.success(), "loom-agent failed: {status}");
        let line = self
            .lines
            .rest()
            .into_iter()
            .find(|l| l.starts_with("AGENT "))
            .expect("AGENT summary line");
        testing::fields(&line)
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
            .collect()
    }
}

/// Events the agent's summary counts as lost at any stage: in the kernel's
/// ring buffers, refused by its queue, or dropped unsent.
pub fn lost(summary: &std::collections::HashMap<String, u64>) -> u64 {
    summary["kernel_drops"] + summary["queue_drops"] + summary["send_drops"]
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `preads` child's log of its calls: (wall µs before, after), sorted.
pub fn calls_of(log: &[String]) -> Vec<(u64, u64)> {
    let mut calls: Vec<(u64, u64)> = log
        .iter()
        .filter_map(|l| {
            let mut it = l.strip_prefix("CALL ")?.split_whitespace();
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect();
    calls.sort_unstable();
    calls
}

/// Asserts that the sorted stored `times` match sorted `calls` one to one,
/// in order, each inside its own call (within `slack_us`: the agent maps
/// the kernel's monotonic clock onto the wall clock once at start).
pub fn assert_each_inside_its_call(times: &[u64], calls: &[(u64, u64)], slack_us: u64) {
    let mut j = 0;
    for (i, &t) in times.iter().enumerate() {
        while j < calls.len() && calls[j].1 + slack_us < t {
            j += 1;
        }
        assert!(
            j < calls.len() && calls[j].0 <= t + slack_us,
            "stored record {i} at {t} µs is in no call of the child (next call {:?})",
            calls.get(j)
        );
        j += 1;
    }
}
