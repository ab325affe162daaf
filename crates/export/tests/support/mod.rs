//! Test support shared by the export tests that need object storage and
//! independent readers: the pinned Python venv (moto's S3 server, DuckDB,
//! PySpark) and an S3-compatible server on loopback.
// Each test binary uses a part of it.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Python of the venv at `target/fleet-venv` with `tests/requirements.txt`
/// installed (built on first use, rebuilt when the pins change; needs
/// python3-venv and PyPI).
pub fn venv_python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let req = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/requirements.txt");
        testing::venv::python("fleet-venv", &req)
    })
    .clone()
}

/// moto's S3 server on loopback; killed on drop.
pub struct Moto {
    child: Option<Child>,
    /// Its port.
    pub port: u16,
}

impl Moto {
    /// Starts a server on a free port and waits until it answers.
    pub fn start() -> Moto {
        let mut m = Moto {
            child: None,
            port: testing::free_port(),
        };
        m.restart();
        m
    }

    /// Its endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Environment for clients (object_store, boto3): static test
    /// credentials, region, endpoint.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
        ]
    }

    /// Sets [`Moto::env`] in this process (tests that open targets in-process).
    pub fn set_env(&self) {
        for (k, v) in self.env() {
            std::env::set_var(k, v);
        }
    }

    /// Stops the server (state is lost: moto keeps it in memory).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        let child = Command::new(venv_python())
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server (pip moto[server])");
        self.child = Some(child);
        let end = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < end,
                "moto_server did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs `script` in the venv's Python with [`Moto::env`] set; returns stdout.
    pub fn python(&self, script: &str) -> String {
        let o = Command::new(venv_python())
            .args(["-c", script])
            .envs(self.env())
            .output()
            .expect("python");
        assert!(
            o.status.success(),
            "python failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Creates a bucket.
    pub fn create_bucket(&self, name: &str) {
        self.python(&format!(
            "import boto3; boto3.client('s3').create_bucket(Bucket='{name}')"
        ));
    }

    /// Downloads every object of `bucket` under `prefix` into `dir`.
    pub fn download(&self, bucket: &str, prefix: &str, dir: &Path) {
        self.python(&format!(
            "import boto3, os\n\
             s3 = boto3.client('s3')\n\
             for page in s3.get_paginator('list_objects_v2').paginate(Bucket='{bucket}', Prefix='{prefix}'):\n\
             \x20   for o in page.get('Contents', []):\n\
             \x20       p = os.path.join('{dir}', o['Key'][len('{prefix}'):].lstrip('/'))\n\
             \x20       os.makedirs(os.path.dirname(p), exist_ok=True)\n\
             \x20       s3.download_file('{bucket}', o['Key'], p)\n",
            dir = dir.display()
        ));
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A TCP forwarder to a loopback port that tests can take down (every
/// connection closed, new ones closed at once) and bring back: an object
/// store "stopped for a while" without losing its state.
pub struct Proxy {
    /// The port clients connect to.
    pub port: u16,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Proxy {
    /// Forwards a new loopback port to `to_port`.
    pub fn start(to_port: u16) -> Proxy {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;
        let l = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = l.local_addr().expect("addr").port();
        let up = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(AtomicU64::new(0));
        let (u, g) = (up.clone(), generation.clone());
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(client) = c else { continue };
                if !u.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", to_port)) else {
                    continue;
                };
                let gen = g.load(Ordering::SeqCst);
                for (mut from, mut to) in [
                    (
                        client.try_clone().expect("clone"),
                        server.try_clone().expect("clone"),
                    ),
                    (server, client),
                ] {
                    let g = g.clone();
                    std::thread::spawn(move || {
                        use std::io::{Read, Write};
                        let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
                        let mut buf = [0u8; 64 << 10];
                        loop {
                            if g.load(Ordering::SeqCst) != gen {
                                break;
                            }
                            match from.read(&mut buf) {
                                Ok(0) => break,
                                Ok(n) => {
                                    if to.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        std::io::ErrorKind::WouldBlock
                                            | std::io::ErrorKind::TimedOut
                                    ) => {}
                                Err(_) => break,
                            }
                        }
                        let _ = from.shutdown(std::net::Shutdown::Both);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy {
            port,
            up,
            generation,
        }
    }

    /// Takes the forwarder down (true) or brings it back (false).
    pub fn set_down(&self, down: bool) {
        use std::sync::atomic::Ordering;
        self.up.store(!down, Ordering::SeqCst);
        if down {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }
}
