//! Dropping the page cache during a run, so reads keep reaching the disk.

use std::path::Path;
use std::time::{Duration, Instant};

/// Where the page cache is dropped from.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Drops the page cache every `interval` (needs root; failures are reported once).
pub struct DropCaches {
    interval: Option<Duration>,
    next: Instant,
    warned: bool,
}

impl DropCaches {
    /// Drops every `interval`, the first time one interval from now; `None` never.
    pub fn new(interval: Option<Duration>) -> DropCaches {
        DropCaches {
            interval,
            next: Instant::now() + interval.unwrap_or_default(),
            warned: false,
        }
    }

    /// Drops the cache if its time has come.
    pub fn tick(&mut self, on_event: &mut dyn FnMut(&str)) {
        let Some(interval) = self.interval else {
            return;
        };
        if Instant::now() < self.next {
            return;
        }
        self.next = Instant::now() + interval;
        if let Err(e) = std::fs::write(Path::new(DROP_CACHES), "1") {
            if !self.warned {
                on_event(&format!(
                    "cannot drop caches through {DROP_CACHES}: {e} (needs root)"
                ));
                self.warned = true;
            }
        }
    }
}
