//! The run's storage directory: wiped and recreated per run, but only if it
//! is empty or was made by this tool (marker file), so a mistyped
//! `--storage-dir` cannot delete unrelated data.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// File that marks a directory as owned by ingest-scaling.
const MARKER: &str = ".ingest-scaling";

/// Default storage directory: `tmp-data/ingest-scaling` in the repository (git-ignored).
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tmp-data/ingest-scaling")
}

/// Empties `dir` (creating it if needed) and marks it as ours.
pub fn prepare(dir: &Path) -> Result<()> {
    if dir.exists() {
        let ours = dir.join(MARKER).exists();
        let empty = std::fs::read_dir(dir)
            .with_context(|| format!("reading storage dir {}", dir.display()))?
            .next()
            .is_none();
        if !ours && !empty {
            bail!(
                "storage dir {} is not empty and was not created by ingest-scaling; refusing to wipe it",
                dir.display()
            );
        }
        std::fs::remove_dir_all(dir)
            .with_context(|| format!("removing old storage dir {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating storage dir {}", dir.display()))?;
    std::fs::write(
        dir.join(MARKER),
        b"scratch data of baselines/ingest-scaling\n",
    )
    .with_context(|| format!("marking storage dir {}", dir.display()))?;
    Ok(())
}

/// Bytes available to unprivileged users on the file system holding `dir`.
pub fn available_bytes(dir: &Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .with_context(|| format!("path {} contains a NUL byte", dir.display()))?;
    // SAFETY: `path` is a NUL-terminated string and `stat` a zeroed plain-data
    // struct that statvfs fills in; both outlive the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("statvfs {}", dir.display()));
    }
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Deletes the data of a finished run (keeps the marked, empty directory).
pub fn clear(dir: &Path) -> Result<()> {
    prepare(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_foreign_non_empty_dir() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("precious"), b"x").expect("write");
        assert!(prepare(tmp.path()).is_err());
        assert!(tmp.path().join("precious").exists());
    }

    #[test]
    fn reports_free_space() {
        let tmp = tempfile::tempdir().expect("tempdir");
        assert!(available_bytes(tmp.path()).expect("statvfs") > 0);
        assert!(available_bytes(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn wipes_own_dir() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("is");
        prepare(&dir).expect("first");
        std::fs::write(dir.join("data"), b"x").expect("write");
        prepare(&dir).expect("second");
        assert!(!dir.join("data").exists());
    }
}
