//! The one test harness of the workspace: every integration test that
//! starts one of our processes (or a real `influxd`) goes through it.
//!
//! - [`bin`]: where a built binary is ([`binary`]), one rule for every test.
//! - [`process`]: a child process with its stdout lines collected as they
//!   come and its stderr kept, killed on drop ([`Process`], [`Finished`]).
//! - [`ready`]: the `--ready-file` JSON our endpoints write once every
//!   listener is bound ([`Ready`]): tests pass port 0 everywhere and never
//!   scrape ports from human-facing output.
//! - [`apps`]: loom-app and influx-app started that way ([`LoomApp`],
//!   [`InfluxApp`]); [`builder`]: a loom-app described by named settings
//!   (`LoomApp::builder().tcp_only().store(dir).start()`).
//! - [`influxd`]: a real InfluxDB 1.x server on a free loopback port.
//! - [`fields`](mod@fields): the machine-readable lines (`ANSWER`, `STATS`, `Final`),
//!   parsed once.
//! - [`venv`]: a pinned Python venv for tests driving real Python clients.

pub mod apps;
pub mod bin;
pub mod builder;
pub mod fields;
pub mod influxd;
pub mod process;
pub mod ready;
pub mod venv;

pub use apps::{App, InfluxApp, LoomApp};
pub use bin::binary;
pub use builder::Builder;
pub use fields::{fields, line_fields, num, Fields};
pub use influxd::Influxd;
pub use process::{Finished, Process};
pub use ready::Ready;

/// A free loopback TCP port (bound, then released), for servers that take
/// their port from a flag or configuration and write no ready file
/// (`influxd`, moto's S3 server).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
