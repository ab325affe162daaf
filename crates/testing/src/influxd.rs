//! A real InfluxDB 1.x server (Debian's `influxd`) on free loopback ports
//! with its own directories, started from the project's `influx.conf`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The project's server configuration.
pub fn config_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../baselines/influxdb/influx.conf")
}

/// The `influxd` binary on PATH, or `None` after printing loudly why the
/// test is skipped (CI installs it: scripts/install-deps.sh).
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
    /// Starts influxd with its data under `dir` on fresh free ports; waits
    /// for `/ping`.
    pub fn start(bin: &Path, dir: &Path) -> Influxd {
        let http_port = crate::free_port();
        let mut s = Influxd {
            child: None,
            url: format!("http://127.0.0.1:{http_port}"),
            http_port,
            rpc_port: crate::free_port(),
            dir: dir.to_path_buf(),
            bin: bin.to_path_buf(),
        };
        s.restart();
        s
    }

    /// The HTTP API's port.
    pub fn http_port(&self) -> u16 {
        self.http_port
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
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.pings() {
            assert!(
                Instant::now() < deadline,
                "influxd did not answer /ping within 30 s; log:\n{}",
                std::fs::read_to_string(self.dir.join("influxd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether `/ping` answers 204.
    fn pings(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.http_port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let req = "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        let mut resp = String::new();
        s.write_all(req.as_bytes()).is_ok()
            && s.read_to_string(&mut resp).is_ok()
            && resp.starts_with("HTTP/1.1 204")
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Influxd {
    fn drop(&mut self) {
        self.kill();
    }
}
