//! The writer's lock on a store directory (`loom.lock`): one writer at a
//! time. The holder writes its pid into the file so a refused second writer
//! can say who holds it. The lock is the kernel's (`flock`), so it goes away
//! with the process however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

const FILE: &str = "loom.lock";
/// How long a lock that names this process is retried (see `acquire`).
const OWN_PID_WAIT: Duration = Duration::from_millis(500);

/// Held for as long as the writer lives.
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock or fails, naming the holder's pid: at once when another
    /// process holds it, after up to [`OWN_PID_WAIT`] when the file names
    /// this process.
    pub(crate) fn acquire(dir: &Path) -> Result<DirLock> {
        let path = dir.join(FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let mut text = String::new();
                    let _ = file.seek(SeekFrom::Start(0));
                    let _ = file.read_to_string(&mut text);
                    let holder: Option<u32> = text.trim().parse().ok();
                    // A lock "held" by this very process after its writer
                    // closed is a child process between fork and exec that
                    // still shares the closed writer's file description (the
                    // descriptor closes at exec): wait that out briefly.
                    if holder == Some(std::process::id()) && started.elapsed() < OWN_PID_WAIT {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    return Err(Error::Locked {
                        dir: dir.to_path_buf(),
                        holder,
                    });
                }
                Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
            }
        }
        let pid = std::process::id();
        file.set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{pid}"))
            .map_err(|e| Error::io(&path, e))?;
        Ok(DirLock { _file: file })
    }
}
