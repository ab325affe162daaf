//! Recordings tooling: the synthetic generator, recording statistics
//! (with event-time disorder), and replay over TCP — paced by the
//! recording's arrival times ([`run_paced`]) or acknowledged and resent
//! ([`run_acked`]), both sending frames prepared ahead (`prepare.rs`). The
//! binaries in `src/bin/` (`replay`, `tcp-replay`, `data-stats`) only parse
//! flags and print.
//!
//! Modules are private; this list is the crate's API:
//!
//! - generating: [`GenConfig`] → [`generate_file`] / [`generate`] (a
//!   [`Phase`] of a [`Workload`]), [`GenSummary`];
//! - describing: [`stats_of_file`] → [`RecordingStats`] (per source
//!   [`SourceStats`], event-time [`Disorder`]), the nearest-rank rule
//!   [`percentile_nearest_rank`];
//! - replaying: [`ReplayConfig`], [`connect_with_retry`], [`run_paced`] →
//!   [`Summary`]; [`AckedConfig`], [`run_acked`] → [`AckedSummary`];
//! - [`SplitMix64`], the one seeded RNG of tests and generators.

mod acked;
mod disorder;
mod gen;
mod percentile;
mod prepare;
mod rng;
mod stats;
mod tcp;

pub use acked::{run as run_acked, wall_offset, AckedConfig, AckedSummary};
pub use disorder::{Disorder, DisorderBuilder, WINDOWS_MS};
pub use gen::{generate, generate_file, header, GenConfig, GenSummary, Phase, Workload};
pub use percentile::percentile_nearest_rank;
pub use prepare::Prepared;
pub use rng::SplitMix64;
pub use stats::{stats_of_file, RecordingStats, SourceStats, StatsBuilder};
pub use tcp::{
    connect_with_retry, run as run_paced, EndReason, Progress, ReplayConfig, ReplayError, Summary,
};
