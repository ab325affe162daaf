//! influx-app's own test helpers on top of the shared harness (the
//! `testing` crate, which starts influxd and the apps): a client of one of
//! influxd's databases and a runtime for its queries.

#![allow(dead_code)]

use std::time::Duration;

use influx_app::client::Client;
pub use testing::influxd::{influxd_binary, Influxd};
pub use testing::{line_fields, App};

/// A client of database `db` on `influxd`.
pub fn client(influxd: &Influxd, db: &str) -> Client {
    Client::new(&influxd.url, db, Duration::from_secs(60)).expect("client")
}

/// A small runtime for the tests' own queries.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}
