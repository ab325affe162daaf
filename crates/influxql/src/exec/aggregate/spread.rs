//! A `GROUP BY time` statement's buckets answered on several threads.
//!
//! Each bucket is answered on its own (one pass over its window of the
//! index), so buckets are independent work: a dashboard's p99 per 5 s
//! bucket over an hour is 720 windows, ~80 ms on one core over a busy
//! series (issue 23's panel 3). The statement's own thread and up to
//! `Limits::threads − 1` helpers take blocks of buckets from one counter
//! until none is left; answers are placed by bucket, so the result is the
//! one a single thread gives. Helpers run at a lower priority
//! ([`HELPER_NICE`]): when ingest needs the cores, the helpers get little
//! of them and the statement's own thread takes the buckets they do not.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;

/// Fewer buckets than this are answered on the statement's thread alone
/// (a helper's start costs tens of µs; a bucket over a busy second, one).
const MIN_SPREAD_BUCKETS: usize = 16;
/// Buckets a thread takes at once: consecutive buckets read neighbouring
/// index pages, and the next bucket's rank most often falls in the bin
/// the thread's last one did (`loom`'s rank hint is per thread).
const BLOCK: usize = 8;
/// Nice value of the helper threads (the statement's own thread keeps its
/// priority): below ingest, which must not lose records to a dashboard.
const HELPER_NICE: i32 = 10;
/// Most threads a statement uses, whatever `Limits::threads` asks (a
/// library caller's 10 000 would otherwise start one per 8 buckets).
const MAX_THREADS: usize = 64;

/// What one thread answered: (bucket, answer) pairs, and what it read.
type Taken = (Vec<(usize, (u64, Vec<Answer>))>, Access, Result<()>);

/// [`bucket`] for each window of `windows` (µs, inclusive; `None` for a
/// bucket wholly before the epoch, which holds nothing), in order.
pub(super) fn answer_buckets(
    snap: &Snapshot,
    plan: &AggregatePlan,
    group: &Group,
    windows: &[Option<(u64, u64)>],
    limits: &Limits,
    access: &mut Access,
) -> Result<Vec<(u64, Vec<Answer>)>> {
    let one = |w: &Option<(u64, u64)>, access: &mut Access| match *w {
        Some(w) => bucket(snap, plan, group, w, limits, access),
        None => Ok((0, Vec::new())),
    };
    // At least a block per thread.
    let threads = limits.threads.min(MAX_THREADS).min(windows.len() / BLOCK);
    if threads <= 1 || windows.len() < MIN_SPREAD_BUCKETS {
        return windows.iter().map(|w| one(w, access)).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let take = || -> Taken {
        let mut mine = Access::with_mode(access.mode);
        let mut out = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let from = next.fetch_add(BLOCK, Ordering::Relaxed);
            if from >= windows.len() {
                break;
            }
            for (i, w) in windows.iter().enumerate().skip(from).take(BLOCK) {
                match one(w, &mut mine) {
                    Ok(a) => out.push((i, a)),
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        return (out, mine, Err(e));
                    }
                }
            }
        }
        (out, mine, Ok(()))
    };
    let taken: Vec<Taken> = std::thread::scope(|s| {
        // A helper that cannot be started leaves its share to the others.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|k| {
                std::thread::Builder::new()
                    .name(format!("influxql-bucket-{k}"))
                    .spawn_scoped(s, || {
                        // Best effort: at normal priority it still answers.
                        let _ = loom::lower_thread_priority(HELPER_NICE);
                        take()
                    })
                    .ok()
            })
            .collect();
        let mut all = vec![take()];
        for h in helpers {
            match h.join() {
                Ok(t) => all.push(t),
                // As if the bucket had panicked on this thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    let mut answers: Vec<Option<(u64, Vec<Answer>)>> = vec![None; windows.len()];
    let mut first_error = None;
    for (out, read, result) in taken {
        access.chunks_read += read.chunks_read;
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
        for (i, a) in out {
            answers[i] = Some(a);
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    // Every bucket was taken by a thread that did not fail.
    Ok(answers
        .into_iter()
        .map(|a| a.unwrap_or((0, Vec::new())))
        .collect())
}
