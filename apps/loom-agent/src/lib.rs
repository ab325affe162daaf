//! `loom-agent` attaches Loom's eBPF probes to a process, a cgroup or the
//! whole host (filtered in the kernel) and streams the records over wire
//! protocol version 2 to a loom-app.
//!
//! - [`cli`]: flags, and `--config` TOML files read as the same flags.
//! - [`series`]: process identity: one series reference (tags `comm`, and
//!   `host` from the HELLO) per process name, records batched per reference.
//! - [`encode`]: on the probe thread, events to records in the series book,
//!   handed to the sender once a round.
//! - [`sender`]: the connection: HELLO, reconnect with backoff, a bounded
//!   buffer while loom-app is away, every dropped record counted.
//! - [`run`]: wiring, the kernel-to-wall-clock time mapping, progress lines.
//! - [`local`]: the pid of a local loom-app, excluded from `--all`.

pub mod cli;
pub mod encode;
mod error;
pub mod local;
pub mod run;
pub mod sender;
pub mod series;

pub use error::AgentError;
