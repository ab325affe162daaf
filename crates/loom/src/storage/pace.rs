//! How much the flusher compresses when it is behind: the configured
//! level, the cheaper `CATCH_UP_LEVEL`, or chunks stored as they are
//! (each counted in `FlusherStatus`), decided per chunk by one policy; and
//! the flusher thread's priority, which lets it fall behind first.
//!
//! Only the flusher's own queue makes it store chunks as they are (the
//! writer is then close to waiting for memory). The application's ingest
//! queue makes it compress cheaper, never store raw: a raw chunk saves the
//! CPU of compressing it but writes 10–15× the bytes, and on a VM's virtio
//! disk writing costs CPU too (kernel time, and hypervisor time the guest
//! sees as steal). Raw at half a full ingest queue, measured against this
//! at 14.5 M records/s of paced P2 on a 2-core VM, ingested 9.8–10.1 M
//! records/s where this ingests 13.1–13.3 M (docs/chunk-format.md).

/// zstd level used while a job waits behind the current one (the flusher is
/// falling behind; with `hurry_at` waiting it stores chunks as they are) or
/// the application's queue fills: on the encode benchmark level −1 costs
/// 5–10 % less CPU than level 1 for 1–15 % more bytes, and only while
/// behind (docs/chunk-format.md).
pub(crate) const CATCH_UP_LEVEL: i32 = -1;
/// The application's ingest queue (`FlusherStatus::ingest_backlog`, in
/// percent of its capacity) at which chunks are compressed at
/// `CATCH_UP_LEVEL`: a flusher that keeps up with its own jobs can still
/// take the CPU the ingest thread needs on a small machine
/// (docs/chunk-format.md), and the application's queue shows it before
/// records are dropped.
const FAST_AT_BACKLOG: u8 = 25;

/// How far behind the flusher is, and what it does about it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Pace {
    /// Nothing waits: the configured level.
    Normal,
    /// A job waits, or the ingest queue fills: the cheaper
    /// `CATCH_UP_LEVEL`.
    Fast,
    /// `hurry_at` jobs wait: chunks stored as they are.
    Raw,
}

impl Pace {
    /// The one policy for "behind", from both signals that say it: jobs
    /// queued behind the current one (compression is not keeping up with
    /// the writer) and the application's ingest queue in percent of its
    /// capacity (the flusher keeps up but takes the CPU ingest needs; on a
    /// small machine the queue shows it before records are dropped).
    /// Whichever is further behind decides.
    pub(crate) fn choose(
        compressing: bool,
        queued_jobs: usize,
        hurry_at: usize,
        ingest_backlog: u8,
    ) -> Pace {
        if !compressing {
            return Pace::Normal;
        }
        let by_jobs = if queued_jobs >= hurry_at {
            Pace::Raw
        } else if queued_jobs >= 1 {
            Pace::Fast
        } else {
            Pace::Normal
        };
        let by_ingest = if ingest_backlog >= FAST_AT_BACKLOG {
            Pace::Fast
        } else {
            Pace::Normal
        };
        by_jobs.max(by_ingest)
    }
}

/// Lowers the flusher thread to nice `nice`; 0 leaves it. A refusal is
/// logged, and the thread runs on.
pub(crate) fn lower_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    if let Err(e) = crate::priority::lower_thread_priority(nice) {
        log::warn!("the flusher keeps its priority (nice {nice} refused: {e})");
    }
}

#[cfg(test)]
mod tests {
    use super::Pace;

    #[test]
    fn the_signal_further_behind_decides() {
        let hurry_at = 3;
        let cases = [
            // (compressing, queued jobs, ingest backlog %, pace)
            (false, 9, 100, Pace::Normal),
            (true, 0, 0, Pace::Normal),
            (true, 0, 24, Pace::Normal),
            (true, 1, 0, Pace::Fast),
            (true, 0, 25, Pace::Fast),
            (true, 2, 49, Pace::Fast),
            (true, 3, 0, Pace::Raw),
            // A full ingest queue alone never stores raw.
            (true, 0, 50, Pace::Fast),
            (true, 1, 100, Pace::Fast),
            (true, 3, 25, Pace::Raw),
            (true, 3, 100, Pace::Raw),
        ];
        for (compressing, queued, backlog, want) in cases {
            assert!(
                Pace::choose(compressing, queued, hurry_at, backlog) == want,
                "compressing {compressing}, {queued} queued, backlog {backlog} %"
            );
        }
    }
}
