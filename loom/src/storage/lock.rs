//! The writer's lock on a store directory (`loom.lock`): one writer at a
//! time. The holder writes its pid into the file so a refused second writer
//! can say who holds it. The lock is the kernel's (`flock`), so it goes away
//! with the process however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};

const FILE: &str = "loom.lock";

/// Held for as long as the writer lives.
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock or fails at once, naming the holder's pid.
    pub(crate) fn acquire(dir: &Path) -> Result<DirLock> {
        let path = dir.join(FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(Error::Locked {
                    dir: dir.to_path_buf(),
                    holder: text.trim().parse().ok(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
        let pid = std::process::id();
        file.set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{pid}"))
            .map_err(|e| Error::io(&path, e))?;
        Ok(DirLock { _file: file })
    }
}
