//! A child process under test: stdout lines collected as they come (with
//! their arrival time), stderr kept, killed on drop so a failing test
//! leaves nothing running.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::fields::{fields, Fields};

/// A running child with piped stdout and stderr.
pub struct Process {
    name: String,
    child: Child,
    lines: Receiver<(Instant, String)>,
    /// Every stdout line taken from `lines` so far, in order, with when it
    /// arrived.
    seen: Vec<(Instant, String)>,
    stdout: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<String>>,
}

/// A process that ended: its status, every stdout line, its stderr.
#[derive(Debug)]
pub struct Finished {
    /// Exit status.
    pub status: ExitStatus,
    /// Every stdout line, in order.
    pub lines: Vec<String>,
    /// All of stderr.
    pub stderr: String,
}

impl Process {
    /// Spawns `cmd` (`name` is for messages) with stdout and stderr piped.
    pub fn spawn(name: &str, mut cmd: Command) -> Process {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        let stdout = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = BufReader::new(err).read_to_string(&mut s);
            s
        });
        Process {
            name: name.to_string(),
            child,
            lines,
            seen: Vec::new(),
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child itself (for `try_wait` and the like).
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The next stdout line and when it arrived; `None` after `timeout` or
    /// at the end of stdout.
    pub fn next_line(&mut self, timeout: Duration) -> Option<(Instant, String)> {
        match self.lines.recv_timeout(timeout) {
            Ok((at, l)) => {
                self.seen.push((at, l.clone()));
                Some((at, l))
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// The first line from now on that starts with `prefix`; panics after
    /// `timeout`, or when stdout ends first, showing what was printed.
    pub fn wait_for(&mut self, prefix: &str, timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok((at, l)) => {
                    self.seen.push((at, l.clone()));
                    if l.starts_with(prefix) {
                        return l;
                    }
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() < end => {}
                Err(_) => {
                    let printed = self.lines_so_far().join("\n");
                    panic!(
                        "{} never printed {prefix:?}; it printed:\n{printed}",
                        self.name
                    )
                }
            }
        }
    }

    /// Every stdout line printed so far (without waiting).
    pub fn lines_so_far(&mut self) -> Vec<String> {
        self.timed_lines_so_far()
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    /// Every stdout line printed so far and when the harness read it.
    pub fn timed_lines_so_far(&mut self) -> Vec<(Instant, String)> {
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
        self.seen.clone()
    }

    /// Sends `signal` (e.g. `libc::SIGINT`) to the child.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: signalling our own child process by its pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "signal {signal} to {}", self.name);
    }

    /// Asks the child to stop (SIGINT, as Ctrl-C) and waits for it.
    pub fn interrupt(self) -> Finished {
        self.signal(libc::SIGINT);
        self.wait()
    }

    /// Kills the child at once (SIGKILL, as a crash would) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the child has exited (without waiting).
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits for the child to exit; every stdout line and its stderr.
    pub fn wait(mut self) -> Finished {
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("wait {}: {e}", self.name));
        if let Some(h) = self.stdout.take() {
            let _ = h.join();
        }
        let mut lines: Vec<String> = std::mem::take(&mut self.seen)
            .into_iter()
            .map(|(_, l)| l)
            .collect();
        lines.extend(self.lines.try_iter().map(|(_, l)| l));
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        Finished {
            status,
            lines,
            stderr,
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Finished {
    /// Whether the process exited with success.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Every stdout line joined, for messages.
    pub fn all(&self) -> String {
        self.lines.join("\n")
    }

    /// The first line starting with `prefix`.
    pub fn line(&self, prefix: &str) -> Option<&str> {
        self.lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .map(String::as_str)
    }

    /// The fields of the `STATS` line; panics (showing the output) without one.
    pub fn stats(&self) -> Fields {
        let l = self
            .line("STATS ")
            .unwrap_or_else(|| panic!("no STATS line in:\n{}\n{}", self.all(), self.stderr));
        fields(l)
    }

    /// The fields of the first `ANSWER query=<q>` line; panics without one.
    pub fn answer(&self, q: &str) -> Fields {
        let l = self
            .line(&format!("ANSWER query={q} "))
            .unwrap_or_else(|| panic!("no answer for {q} in:\n{}\n{}", self.all(), self.stderr));
        fields(l)
    }

    /// The fields of every `ANSWER` line by question (the last one wins).
    pub fn answers(&self) -> HashMap<String, Fields> {
        self.lines
            .iter()
            .filter(|l| l.starts_with("ANSWER "))
            .map(|l| {
                let f = fields(l);
                (f.get("query").cloned().unwrap_or_default(), f)
            })
            .collect()
    }
}
