//! The calls the pread child makes, shared by the child binary
//! (`probes-pread-child`) and `tests/syscall_latency.rs`.
#![allow(dead_code)]

use std::time::Duration;

/// Fast `pread64` calls (into an ordinary buffer).
pub const FAST: usize = 200;
/// Positions (in call order) of the slow calls.
pub const SLOW_AT: [usize; 5] = [20, 60, 100, 140, 180];
/// How long the child's fault handler holds each slow call.
pub const SLOW_DELAY: Duration = Duration::from_millis(20);
/// Bytes per call, and the page size of the userfaultfd mapping.
pub const PAGE: usize = 4096;

/// Every `pread64` the child makes after "go".
pub fn total_calls() -> usize {
    FAST + SLOW_AT.len()
}
