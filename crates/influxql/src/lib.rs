//! InfluxQL over Loom: the InfluxDB 1.x query language and HTTP query API.
//!
//! Text is parsed ([`parse`]) into an AST whose `Display` prints canonical
//! InfluxQL; the planner ([`plan`]) resolves names against the store's
//! schemas and maps each statement onto Loom's operators (index summaries
//! for aggregates, bin-located percentiles, range scans for predicates on
//! the indexed field); [`exec`] runs plans on one snapshot; [`encode`]
//! writes InfluxDB's JSON; [`http`] serves `/ping` and `/query`.
//!
//! Every answer is exact. Constructs outside the subset are refused with
//! [`Error::Unsupported`] naming them, never answered approximately.
//! `percentile()` follows InfluxDB 1.x's rank rule (see [`exec::rank`]).

pub mod encode;
pub mod error;
pub mod exec;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod http;
pub mod parse;
pub mod plan;
pub mod query;
pub mod result;

pub use error::{Error, Result};
pub use exec::{Access, Limits};
pub use query::{now_ns, run, run_with};
pub use result::{Cell, SeriesResult, StatementResult};
