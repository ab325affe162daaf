//! A loom-app under test, described by named settings instead of repeated
//! argument lists: `LoomApp::builder().tcp_only().store(dir).acks(20).start()`.
//! Each setting says what it is for; [`Builder::args`] adds anything else.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use crate::apps::App;
use crate::process::Finished;

/// A change to the command before it runs.
type Customize<'a> = Box<dyn FnOnce(&mut Command) + 'a>;

/// The flags of a loom-app under test, built up by named settings.
#[derive(Default)]
pub struct Builder<'a> {
    args: Vec<OsString>,
    customize: Option<Customize<'a>>,
}

impl App {
    /// A loom-app to configure, then [`Builder::start`]; every listener not
    /// turned off gets a free loopback port.
    pub fn builder<'a>() -> Builder<'a> {
        Builder::default()
    }
}

impl<'a> Builder<'a> {
    /// Adds flags as given.
    pub fn args<I, S>(mut self, args: I) -> Builder<'a>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds one flag with its value.
    fn flag(self, name: &str, value: impl Into<OsString>) -> Builder<'a> {
        self.args([OsString::from(name), value.into()])
    }

    /// The store in `dir` (`--loom-path`), reopened when it exists.
    pub fn store(self, dir: &Path) -> Builder<'a> {
        self.flag("--loom-path", dir)
    }

    /// Only the telemetry stream listens: the InfluxDB API and both OTLP
    /// receivers are off.
    pub fn tcp_only(self) -> Builder<'a> {
        self.flag("--http", "off").no_otlp()
    }

    /// Both OTLP receivers off (the InfluxDB API and the stream listen).
    pub fn no_otlp(self) -> Builder<'a> {
        self.flag("--otlp-grpc", "off").flag("--otlp-http", "off")
    }

    /// The telemetry stream on `addr` instead of a free loopback port.
    pub fn addr(self, addr: &str) -> Builder<'a> {
        self.flag("--addr", addr)
    }

    /// `ANSWER` and `STATS` lines, and the progress line only once a
    /// minute (tests read the machine lines, not the progress).
    pub fn machine_quiet(self) -> Builder<'a> {
        self.args(["--machine-output", "--report-interval-s", "60"])
    }

    /// Acknowledged senders' frames acknowledged every `interval_ms`
    /// (`--ack-interval-ms`).
    pub fn acks(self, interval_ms: u64) -> Builder<'a> {
        self.flag("--ack-interval-ms", interval_ms.to_string())
    }

    /// The token senders and clients must present (`--auth-token-file`).
    pub fn token_file(self, path: &Path) -> Builder<'a> {
        self.flag("--auth-token-file", path)
    }

    /// The telemetry stream is TLS only, with this certificate and key.
    pub fn tls(self, cert: &Path, key: &Path) -> Builder<'a> {
        self.flag("--tls-cert", cert).flag("--tls-key", key)
    }

    /// Records stored at their own (event) times, unshifted: a recording's
    /// times are the store's, so tests compare with brute force directly.
    pub fn event_times(self) -> Builder<'a> {
        self.args(["--timestamps", "event", "--event-offset-us", "0"])
    }

    /// A queue deep enough that a fast replay drops nothing
    /// (`--queue-capacity 1000000`).
    pub fn deep_queue(self) -> Builder<'a> {
        self.flag("--queue-capacity", "1000000")
    }

    /// Changes the command before it runs (environment, user).
    pub fn customize(mut self, f: impl FnOnce(&mut Command) + 'a) -> Builder<'a> {
        self.customize = Some(Box::new(f));
        self
    }

    /// Starts loom-app; panics when it exits before it listens.
    pub fn start(self) -> App {
        self.try_start().unwrap_or_else(|f| {
            panic!(
                "loom-app exited before it listened:\n{}\n{}",
                f.all(),
                f.stderr
            )
        })
    }

    /// Starts loom-app; `Err` with its output when it exits before it
    /// listens (a refused start).
    pub fn try_start(self) -> Result<App, Finished> {
        let customize = self.customize.unwrap_or_else(|| Box::new(|_| {}));
        App::start(
            "loom-app",
            crate::apps::LOOM_APP_LISTENERS,
            self.args,
            customize,
        )
    }
}
