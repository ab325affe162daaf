//! The monitored server: a `valkey-server` (or `redis-server`) child process
//! on 127.0.0.1 with its own config file and a temporary data directory, no
//! persistence, stopped when dropped.

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::WorkloadError;

/// Binaries tried, in order, when none is given.
const SERVER_BINARIES: [&str; 2] = ["valkey-server", "redis-server"];
/// How long the server may take to answer PING after start.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the server may take to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// Lines of the server log shown when it fails.
const LOG_TAIL_LINES: usize = 15;

/// A running server. Dropping it stops the process and deletes its directory.
pub struct Server {
    child: Child,
    binary: PathBuf,
    port: u16,
    dir: tempfile::TempDir,
}

impl Server {
    /// Starts `binary` (or the first of valkey-server, redis-server found in
    /// PATH) on 127.0.0.1:`port` (a free port when `None`) and waits until it
    /// answers PING.
    pub fn start(binary: Option<&Path>, port: Option<u16>) -> Result<Server, WorkloadError> {
        let binary = match binary {
            Some(b) => b.to_path_buf(),
            None => find_in_path(&SERVER_BINARIES).ok_or(WorkloadError::ServerNotFound)?,
        };
        let port = match port {
            Some(p) => p,
            None => free_port()?,
        };
        let dir = tempfile::Builder::new()
            .prefix("loom-valkey-")
            .tempdir()
            .map_err(WorkloadError::io("creating the server's data directory"))?;
        let conf = write_config(dir.path(), port)?;
        let mut command = Command::new(&binary);
        command
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: a terminal Ctrl-C reaches the workload,
            // which then stops the server itself after the run's teardown.
            .process_group(0);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            command.pre_exec(|| {
                // The server must not outlive a workload that is killed outright.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(WorkloadError::io(format!("starting {}", binary.display())))?;
        let mut server = Server {
            child,
            binary,
            port,
            dir,
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id (the probes' target tgid).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its data directory (config file, log), deleted when the server is dropped.
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The binary that runs.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The `redis://` URL of the server.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn failure(&self, detail: impl Into<String>) -> WorkloadError {
        let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
        WorkloadError::Server {
            binary: self.binary.display().to_string(),
            detail: if tail.is_empty() {
                detail.into()
            } else {
                format!("{}; end of its log:\n{tail}", detail.into())
            },
        }
    }

    fn wait_ready(&mut self) -> Result<(), WorkloadError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let client = redis::Client::open(self.url())
            .map_err(WorkloadError::redis("parsing the server URL"))?;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Err(self.failure(format!("exited at start ({status})"))),
                Ok(None) => {}
                Err(e) => return Err(WorkloadError::io("waiting for the server")(e)),
            }
            let ping = client
                .get_connection_with_timeout(Duration::from_millis(200))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if ping.is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.failure(format!(
                    "no answer on 127.0.0.1:{} within {} s",
                    self.port,
                    START_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn stop(&mut self) {
        if !self.is_running() {
            return;
        }
        // SIGTERM lets it shut down cleanly (nothing to save: persistence is off).
        // SAFETY: kill has no memory preconditions; the pid is our live child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if !self.is_running() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn find_in_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// A port that was free a moment ago (the kernel picks it; the server binds
/// it right after, so a clash is unlikely and reported as a start failure).
fn free_port() -> Result<u16, WorkloadError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(WorkloadError::io("finding a free port"))?;
    Ok(l.local_addr()
        .map_err(WorkloadError::io("finding a free port"))?
        .port())
}

/// The server's own config: loopback only, no persistence, everything in `dir`.
fn write_config(dir: &Path, port: u16) -> Result<PathBuf, WorkloadError> {
    let path = dir.join("valkey.conf");
    let quoted = |p: &Path| format!("\"{}\"", p.display());
    let text = format!(
        "bind 127.0.0.1\nport {port}\nprotected-mode yes\ndaemonize no\nsave \"\"\nappendonly no\ndir {}\nlogfile {}\n",
        quoted(dir),
        quoted(&dir.join("server.log")),
    );
    let mut f = std::fs::File::create(&path)
        .map_err(WorkloadError::io(format!("creating {}", path.display())))?;
    f.write_all(text.as_bytes())
        .map_err(WorkloadError::io(format!("writing {}", path.display())))?;
    Ok(path)
}
