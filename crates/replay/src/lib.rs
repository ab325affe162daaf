//! Recordings tooling: the synthetic generator ([`gen`]), recording
//! statistics ([`stats`], event-time [`disorder`]) and paced TCP replay ([`tcp`], sending frames
//! prepared ahead by [`prepare`]). The binaries in
//! `src/bin/` (`replay`, `tcp-replay`, `data-stats`) only parse flags and print.

pub mod disorder;
pub mod gen;
pub mod prepare;
pub mod rng;
pub mod stats;
pub mod tcp;
