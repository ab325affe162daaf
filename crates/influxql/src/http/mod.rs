//! InfluxDB 1.x HTTP API: `GET /ping`, `GET|POST /query`, and `POST /write`
//! when the server is given a [`WriteSink`].
//!
//! [`handler::handle`] maps one buffered request to one response and knows
//! nothing of sockets, so tests and fuzzing drive it directly;
//! [`server`] is the hyper glue that reads requests (bounded size, read
//! timeouts) and runs queries on blocking threads beside ingest.

pub mod auth;
pub mod config;
pub mod handler;
pub mod message;
pub mod server;
pub mod write;

pub use config::HttpConfig;
pub use handler::handle;
pub use message::{Request, Response};
pub use server::{serve, serve_with_writes, ServerHandle};
pub use write::{WriteFuture, WriteRequest, WriteSink};

/// Version reported in `X-Influxdb-Version`: the influxd release whose
/// answers Loom is checked against (Debian's 1.6.7), marked as Loom's.
/// Clients read it as a 1.x server (they test the leading `1.`) and none
/// assumes a 1.8-only API from it (Flux, `/api/v2/…`, which Loom does not
/// serve); see docs/influxql.md.
pub const INFLUXDB_VERSION: &str = "1.6.7-loom";

/// `X-Influxdb-Build`, as influxd sends it (clients tell OSS from
/// Enterprise by it).
pub const INFLUXDB_BUILD: &str = "OSS";
