//! Blank files made ahead of time, so a log file's first life is written
//! over blocks it already has.
//!
//! A recycled file ([`super::files`]) makes `fdatasync` flush data only; a
//! new file would pay the journal commit of its growing size on every
//! sync, which is what a one-request-at-a-time client waits for. Until done
//! files come back for reuse (the reorder window and a persist later), the
//! writer takes blank files that this thread filled with zeros off the
//! acknowledgement path: `blank-<k>.log`, written under a temporary name
//! and renamed once synced, so a blank file is always whole. Zeros read as
//! the end of a file (no entry has magic 0).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use anyhow::Context;

use super::files::numbered;
use super::{FILE_BYTES, LAST_ENTRY_BYTES};

/// Blank files kept ready.
const READY: usize = 2;
/// A blank file's size: a full file and its last entry.
const BLANK_BYTES: u64 = FILE_BYTES + LAST_ENTRY_BYTES;

/// Ready blank files (their numbers) and whether the preparer should stop.
#[derive(Default)]
struct Pool {
    ready: Vec<u64>,
    stop: bool,
}

/// The writer's side: takes blank files; the preparer refills behind it.
pub(super) struct Blanks {
    dir: PathBuf,
    pool: Arc<(Mutex<Pool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

pub(super) fn blank_name(dir: &Path, k: u64) -> PathBuf {
    dir.join(format!("blank-{k:010}.log"))
}

impl Blanks {
    /// Finds the blank files an earlier run left and starts the preparer.
    pub(super) fn start(dir: &Path) -> anyhow::Result<Blanks> {
        let ready = numbered(dir, "blank-")?;
        let next = ready.last().map_or(1, |k| k + 1);
        let pool = Arc::new((Mutex::new(Pool { ready, stop: false }), Condvar::new()));
        let thread = {
            let (dir, pool) = (dir.to_path_buf(), Arc::clone(&pool));
            std::thread::Builder::new()
                .name("intake-blanks".into())
                .spawn(move || prepare(&dir, next, &pool))
                .context("starting the intake-log blank-file thread")?
        };
        Ok(Blanks {
            dir: dir.to_path_buf(),
            pool,
            thread: Some(thread),
        })
    }

    /// A ready blank file's path, if there is one (the preparer is asked
    /// for another).
    pub(super) fn take(&self) -> Option<PathBuf> {
        let (lock, wake) = &*self.pool;
        let mut pool = lock.lock().unwrap_or_else(|p| p.into_inner());
        let k = pool.ready.pop()?;
        wake.notify_one();
        Some(blank_name(&self.dir, k))
    }
}

impl Drop for Blanks {
    fn drop(&mut self) {
        let (lock, wake) = &*self.pool;
        lock.lock().unwrap_or_else(|p| p.into_inner()).stop = true;
        wake.notify_one();
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                log::error!("the intake-log blank-file thread panicked");
            }
        }
    }
}

/// Keeps [`READY`] blank files ready until told to stop.
fn prepare(dir: &Path, mut next: u64, pool: &(Mutex<Pool>, Condvar)) {
    let (lock, wake) = pool;
    let mut failures = 0u32;
    loop {
        {
            let mut p = lock.lock().unwrap_or_else(|p| p.into_inner());
            while !p.stop && p.ready.len() >= READY {
                p = wake.wait(p).unwrap_or_else(|p| p.into_inner());
            }
            if p.stop {
                return;
            }
        }
        match make_blank(dir, next) {
            Ok(()) => {
                lock.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .ready
                    .push(next);
                next += 1;
            }
            Err(e) => {
                // The writer then creates files as it needs them (slower
                // syncs, nothing lost); try again later, quietly.
                failures += 1;
                if failures <= 3 {
                    log::warn!(
                        "intake log: cannot prepare a blank file in {}: {e:#}",
                        dir.display()
                    );
                }
                let p = lock.lock().unwrap_or_else(|p| p.into_inner());
                let _ = wake.wait_timeout(p, std::time::Duration::from_secs(10));
            }
        }
    }
}

fn make_blank(dir: &Path, k: u64) -> anyhow::Result<()> {
    let tmp = dir.join("blank.tmp");
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    let zeros = vec![0u8; 1 << 20];
    let mut left = BLANK_BYTES;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..n])
            .with_context(|| format!("writing {}", tmp.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .with_context(|| format!("syncing {}", tmp.display()))?;
    let path = blank_name(dir, k);
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing {}", dir.display()))?;
    Ok(())
}
