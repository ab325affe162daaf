//! Shared by the integration tests: a real influxd on free loopback ports with
//! its own directories, started from the project's influx.conf, and the
//! plumbing to run the app binaries and read their output.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use influx_app::client::Client;

/// The project's server configuration.
pub fn config_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../baselines/influxdb/influx.conf")
}

/// The `influxd` binary on PATH, or `None` after printing loudly why the test
/// is skipped (CI installs it: scripts/install-deps.sh).
pub fn influxd_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|d| d.join("influxd"))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!(
            "\n*** SKIPPED: no influxd binary on PATH. Install Debian's influxdb package \
             (apt-get install influxdb influxdb-client, or scripts/install-deps.sh). ***\n"
        );
    }
    found
}

/// A free loopback TCP port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A running influxd; killed when dropped.
pub struct Influxd {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    http_port: u16,
    rpc_port: u16,
    dir: PathBuf,
    bin: PathBuf,
}

impl Influxd {
    /// Starts influxd with its data under `dir` on fresh free ports; waits for `/ping`.
    pub fn start(bin: &Path, dir: &Path) -> Influxd {
        let mut s = Influxd {
            child: None,
            url: String::new(),
            http_port: free_port(),
            rpc_port: free_port(),
            dir: dir.to_path_buf(),
            bin: bin.to_path_buf(),
        };
        s.url = format!("http://127.0.0.1:{}", s.http_port);
        s.restart();
        s
    }

    /// Starts (again) on the same ports and directories; waits for `/ping`.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "influxd is already running");
        std::fs::create_dir_all(&self.dir).expect("influxd dir");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("influxd.log"))
            .expect("influxd log");
        let child = Command::new(&self.bin)
            .arg("-config")
            .arg(config_path())
            .env("INFLUXDB_META_DIR", self.dir.join("meta"))
            .env("INFLUXDB_DATA_DIR", self.dir.join("data"))
            .env("INFLUXDB_DATA_WAL_DIR", self.dir.join("wal"))
            .env(
                "INFLUXDB_HTTP_BIND_ADDRESS",
                format!("127.0.0.1:{}", self.http_port),
            )
            .env(
                "INFLUXDB_BIND_ADDRESS",
                format!("127.0.0.1:{}", self.rpc_port),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn influxd");
        self.child = Some(child);
        let client = self.client("ping");
        let rt = runtime();
        let deadline = Instant::now() + Duration::from_secs(30);
        while rt.block_on(client.ping()).is_err() {
            assert!(
                Instant::now() < deadline,
                "influxd did not answer /ping within 30 s; log:\n{}",
                std::fs::read_to_string(self.dir.join("influxd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// A client of database `db` on this server.
    pub fn client(&self, db: &str) -> Client {
        Client::new(&self.url, db, Duration::from_secs(60)).expect("client")
    }
}

impl Drop for Influxd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A small runtime for the tests' own queries.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A spawned app whose stdout lines arrive on a channel.
pub struct App {
    pub child: Child,
    pub first_line: String,
    lines: mpsc::Receiver<String>,
    out: Option<std::thread::JoinHandle<()>>,
    err: Option<std::thread::JoinHandle<String>>,
}

impl App {
    /// Spawns `cmd` and waits for its first stdout line (the listening address).
    pub fn spawn(mut cmd: Command) -> App {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn app");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut s);
            s
        });
        let (tx, lines) = mpsc::channel();
        let out = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let first_line = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the app printed its first line");
        App {
            child,
            first_line,
            lines,
            out: Some(out),
            err: Some(err),
        }
    }

    /// The `host:port` the app listens on (from its first line).
    pub fn addr(&self) -> String {
        self.first_line
            .split("listening on ")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .expect("address in the first line")
            .to_string()
    }

    /// Waits for exit: (success, stdout lines, stderr).
    pub fn wait(mut self) -> (bool, Vec<String>, String) {
        let status = self.child.wait().expect("wait app");
        if let Some(h) = self.out.take() {
            let _ = h.join();
        }
        let err = self.err.take().map(|h| h.join().unwrap_or_default());
        let lines = std::iter::once(self.first_line.clone())
            .chain(self.lines.try_iter())
            .collect();
        (status.success(), lines, err.unwrap_or_default())
    }
}

/// `key=value` fields of a line.
pub fn fields(line: &str) -> HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Fields of the first line starting with `prefix`.
pub fn line_fields(lines: &[String], prefix: &str) -> HashMap<String, String> {
    let l = lines
        .iter()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{}", lines.join("\n")));
    fields(l)
}

/// The loom-app binary of this build (built first if missing).
pub fn loom_app_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    // target/<profile>/deps/<test> → target/<profile>/loom-app
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir")
        .to_path_buf();
    let bin = dir.join("loom-app");
    if !bin.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "loom-app"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let ok = cmd.status().expect("cargo build loom-app").success();
        assert!(ok && bin.is_file(), "could not build {}", bin.display());
    }
    bin
}
