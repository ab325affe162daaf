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
//! - [`fields`]: the machine-readable lines (`ANSWER`, `STATS`, `Final`),
//!   parsed once.

pub mod apps;
pub mod bin;
pub mod builder;
pub mod fields;
pub mod influxd;
pub mod process;
pub mod ready;

pub use apps::{App, InfluxApp, LoomApp};
pub use bin::binary;
pub use builder::Builder;
pub use fields::{fields, line_fields, num, Fields};
pub use influxd::Influxd;
pub use process::{Finished, Process};
pub use ready::Ready;
