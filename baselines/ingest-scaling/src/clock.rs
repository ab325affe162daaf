//! Monotonic microsecond clock, as `loom-app` uses for arrival timestamps.

use std::time::Instant;

/// Microseconds elapsed since the clock was started (monotonic, never goes back).
#[derive(Clone, Copy, Debug)]
pub struct MicrosClock {
    start: Instant,
}

impl MicrosClock {
    /// Starts the clock at zero now.
    pub fn start() -> Self {
        MicrosClock {
            start: Instant::now(),
        }
    }

    /// Microseconds since [`MicrosClock::start`].
    pub fn now_us(&self) -> u64 {
        // u64 µs overflows after ~584,000 years.
        self.start.elapsed().as_micros() as u64
    }
}
