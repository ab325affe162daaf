//! loom-app and influx-app as child processes: every listener on port 0
//! unless the test names an address, and the bound addresses read from
//! the ready file the app writes.

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use crate::bin::binary;
use crate::process::{Finished, Process};
use crate::ready::Ready;

/// How long an app may take to bind its listeners (a reopened store is
/// recovered first).
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The listener flags of loom-app, each given `127.0.0.1:0` unless the
/// test passes it.
pub(crate) const LOOM_APP_LISTENERS: &[&str] = &["--addr", "--http", "--otlp-grpc", "--otlp-http"];
/// The listener flag of influx-app.
const INFLUX_APP_LISTENERS: &[&str] = &["--addr"];

/// A running endpoint app (loom-app or influx-app); killed on drop.
pub struct App {
    /// The child process and its output.
    pub process: Process,
    /// Where it listens.
    pub ready: Ready,
    /// Holds the ready file.
    _dir: tempfile::TempDir,
}

/// loom-app under test.
pub type LoomApp = App;
/// influx-app under test.
pub type InfluxApp = App;

/// loom-app is started through [`App::builder`] (`crate::builder`).
impl App {
    /// Starts influx-app with `args`; panics when it exits before it listens.
    pub fn influx_app<I, S>(args: I) -> App
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        App::start("influx-app", INFLUX_APP_LISTENERS, args, |_| {}).unwrap_or_else(|f| {
            panic!(
                "influx-app exited before it listened:\n{}\n{}",
                f.all(),
                f.stderr
            )
        })
    }

    /// Starts binary `name` with `args` plus `127.0.0.1:0` for every flag
    /// of `listeners` that `args` does not give, and `--ready-file`;
    /// `customize` may change the command (environment, directory). Waits
    /// until the ready file appears; `Err` with the output when the app
    /// exits first (a test of a refused start).
    pub fn start<I, S>(
        name: &str,
        listeners: &[&str],
        args: I,
        customize: impl FnOnce(&mut Command),
    ) -> Result<App, Finished>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let dir = tempfile::tempdir().expect("a directory for the ready file");
        // Writable by an app a test runs as another user (`nobody`).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod the ready file's directory");
        let ready_file = dir.path().join("ready.json");
        let mut cmd = Command::new(binary(name));
        for flag in listeners {
            let given = args.iter().any(|a| {
                a.to_str()
                    .is_some_and(|a| a == *flag || a.starts_with(&format!("{flag}=")))
            });
            if !given {
                cmd.args([flag, "127.0.0.1:0"]);
            }
        }
        cmd.args(&args).arg("--ready-file").arg(&ready_file);
        customize(&mut cmd);
        let mut process = Process::spawn(name, cmd);
        match Ready::wait(&ready_file, &mut process, READY_TIMEOUT) {
            Some(ready) => Ok(App {
                process,
                ready,
                _dir: dir,
            }),
            None => Err(process.wait()),
        }
    }

    /// The telemetry stream's `ip:port`.
    pub fn tcp(&self) -> String {
        addr(self.ready.tcp, "tcp")
    }

    /// The InfluxDB API's `ip:port` (loom-app; panics when off).
    pub fn http(&self) -> String {
        addr(self.ready.http, "http")
    }

    /// OTLP/gRPC's `ip:port` (loom-app; panics when off).
    pub fn otlp_grpc(&self) -> String {
        addr(self.ready.otlp_grpc, "otlp_grpc")
    }

    /// OTLP/HTTP's `ip:port` (loom-app; panics when off).
    pub fn otlp_http(&self) -> String {
        addr(self.ready.otlp_http, "otlp_http")
    }

    /// Asks the app to stop (SIGINT) and waits for its end.
    pub fn stop(self) -> Finished {
        self.process.interrupt()
    }

    /// Waits for the app to end by itself (`--stop-after-connections`).
    pub fn wait(self) -> Finished {
        self.process.wait()
    }
}

fn addr(a: Option<SocketAddr>, what: &str) -> String {
    a.unwrap_or_else(|| panic!("the app's {what} listener is off"))
        .to_string()
}
