//! InfluxDB 1.x HTTP query API: `GET /ping`, `GET|POST /query`.
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

pub use config::HttpConfig;
pub use handler::handle;
pub use message::{Request, Response};
pub use server::{serve, ServerHandle};

/// Version reported in `X-Influxdb-Version`: the 1.x API Loom speaks.
pub const INFLUXDB_VERSION: &str = "1.8.10-loom";
