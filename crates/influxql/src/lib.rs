//! InfluxQL over Loom: the InfluxDB 1.x query language and HTTP query API.
//!
//! Text is parsed ([`parse`]) into an AST whose `Display` prints canonical
//! InfluxQL; the planner (`plan`) resolves names against the store's
//! schemas and maps each statement onto Loom's operators (index summaries
//! for aggregates, bin-located percentiles, range scans for predicates on
//! the indexed field); `exec` runs plans on one snapshot; `encode.rs`
//! writes InfluxDB's JSON ([`encode_results`], [`encode_error`]); [`http`]
//! serves `/ping`, `/query` and `/write`. [`run`] / [`run_with`] are the
//! whole path from text to answers.
//!
//! `parse` (the AST) and `http` (the server) are public namespaces; `plan`,
//! `exec`, `encode`, `error`, `query` and `result` are private and the
//! re-exports below are their API (what other crates use: [`Access`],
//! [`Limits`], [`influx_rank`], the results and errors), so planning and
//! execution can be reshaped without touching their users.
//!
//! Every answer is exact. Constructs outside the subset are refused with
//! [`Error::Unsupported`] naming them, never answered approximately.
//! `percentile()` follows InfluxDB 1.x's rank rule (see [`influx_rank`]).

mod encode;
mod error;
mod exec;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod http;
pub mod parse;
mod plan;
mod query;
mod result;

pub use encode::{error as encode_error, results as encode_results, rfc3339, Epoch};
pub use error::{Error, Result};
pub use exec::{influx_rank, Access, Limits};
pub use query::{now_ns, run, run_with};
pub use result::{Cell, SeriesResult, StatementResult};
