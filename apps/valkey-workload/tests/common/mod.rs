//! Shared by the live tests: preconditions with clear failures, loopback
//! side traffic, reading a recording.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use telemetry::{Batch, RecordingHeader, RecordingReader};

/// Fails with the missing piece named: these tests load eBPF (root) and run a
/// real server.
pub fn require_root_and_server() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "these tests load eBPF probes: run them as root (CI does), e.g. sudo -E cargo test -p valkey-workload"
    );
    let found = ["valkey-server", "redis-server"].iter().any(|name| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
    });
    assert!(
        found,
        "no valkey-server or redis-server in PATH: apt-get install redis-server (scripts/install-deps.sh does)"
    );
}

/// Echo traffic to a loopback port of its own, bounded in count and time,
/// until stopped: packets the probe must *not* capture.
pub struct SideTraffic {
    /// The port the traffic goes to.
    pub port: u16,
    /// Messages echoed so far.
    pub messages: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// Most messages the side traffic sends.
const SIDE_MAX_MESSAGES: u64 = 20_000;
/// Longest the side traffic runs.
const SIDE_MAX_TIME: Duration = Duration::from_secs(120);

impl SideTraffic {
    /// Starts an echo listener on 127.0.0.1 and a client sending to it.
    pub fn start() -> SideTraffic {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind side port");
        let port = listener.local_addr().expect("side addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let messages = Arc::new(AtomicU64::new(0));
        let server = std::thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut buf = [0u8; 64];
            while s.read_exact(&mut buf).is_ok() {
                if s.write_all(&buf).is_err() {
                    return;
                }
            }
        });
        let client = {
            let (stop, messages) = (stop.clone(), messages.clone());
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect side port");
                let deadline = Instant::now() + SIDE_MAX_TIME;
                let mut buf = [9u8; 64];
                while !stop.load(Ordering::Relaxed)
                    && Instant::now() < deadline
                    && messages.load(Ordering::Relaxed) < SIDE_MAX_MESSAGES
                {
                    if c.write_all(&buf).is_err() || c.read_exact(&mut buf).is_err() {
                        return;
                    }
                    messages.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        SideTraffic {
            port,
            messages,
            stop,
            threads: vec![client, server],
        }
    }

    /// Stops the traffic; returns the messages echoed.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().expect("side traffic thread");
        }
        self.messages.load(Ordering::Relaxed)
    }
}

/// The header and batches of a recording.
pub fn read_recording(path: &Path) -> (RecordingHeader, Vec<Batch>) {
    let reader = RecordingReader::open(path).expect("open recording");
    let header = reader.header().clone();
    let batches = reader.map(|b| b.expect("read batch")).collect();
    (header, batches)
}
