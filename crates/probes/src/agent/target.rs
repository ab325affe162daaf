//! What the agent watches: pids, process names, cgroup v2 subtrees or the
//! whole host, checked against the machine before anything loads.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::ProbeError;

/// `statfs` magic of cgroup v2.
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// Most cgroups (must match MAX_TARGET_CGROUPS in `agent_events.h`).
pub const MAX_CGROUPS: usize = 8;
/// Most process names (the `target_comms` map size).
pub const MAX_COMMS: usize = 256;

/// The target selection; combinable: an event is kept when its task
/// matches any of the given pids, names or cgroups (or `all`), and never
/// for an excluded process.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// Every task on the host except `exclude_pids`.
    pub all: bool,
    /// Processes (all their threads).
    pub pids: Vec<u32>,
    /// With `pids`: processes they fork later join.
    pub follow_children: bool,
    /// Process names as in `/proc/PID/comm` (at most 15 bytes), matched
    /// on the thread group leader's name, so a thread that renames itself
    /// still counts as its process.
    pub comms: Vec<String>,
    /// cgroup v2 directories; their subtrees are matched by cgroup id.
    pub cgroups: Vec<PathBuf>,
    /// Processes never traced (the agent itself, the loom-app it feeds).
    pub exclude_pids: Vec<u32>,
}

/// A cgroup v2 directory as the kernel names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupTarget {
    /// cgroup id (the directory's inode number on cgroup2).
    pub id: u64,
    /// Depth below the cgroup2 root.
    pub level: u32,
}

impl Targets {
    /// Fails with a message naming the problem when nothing is selected,
    /// a pid does not exist, a name is too long or a path is not cgroup v2.
    pub fn check(&self) -> Result<Vec<CgroupTarget>, ProbeError> {
        let bad = |m: String| ProbeError::InvalidConfig(m);
        if !self.all && self.pids.is_empty() && self.comms.is_empty() && self.cgroups.is_empty() {
            return Err(bad(
                "no target: give --pid, --comm, --cgroup or --all".to_string()
            ));
        }
        for pid in &self.pids {
            if !Path::new(&format!("/proc/{pid}")).is_dir() {
                return Err(bad(format!("--pid {pid}: no such process")));
            }
        }
        if self.comms.len() > MAX_COMMS {
            return Err(bad(format!("at most {MAX_COMMS} --comm names")));
        }
        for c in &self.comms {
            if c.is_empty() || c.len() > 15 {
                return Err(bad(format!(
                    "--comm {c:?}: a process name has 1 to 15 bytes (as in /proc/PID/comm)"
                )));
            }
        }
        if self.cgroups.len() > MAX_CGROUPS {
            return Err(bad(format!("at most {MAX_CGROUPS} --cgroup paths")));
        }
        self.cgroups.iter().map(|p| cgroup_target(p)).collect()
    }
}

/// The id and level of a cgroup v2 directory.
pub fn cgroup_target(path: &Path) -> Result<CgroupTarget, ProbeError> {
    let bad = |m: String| ProbeError::InvalidConfig(m);
    let dir = path
        .canonicalize()
        .map_err(|e| bad(format!("--cgroup {}: {e}", path.display())))?;
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| bad(format!("--cgroup {}: path has a NUL", path.display())))?;
    // SAFETY: statfs fills the zeroed struct; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(bad(format!(
            "--cgroup {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    if st.f_type as i64 != CGROUP2_SUPER_MAGIC {
        return Err(bad(format!(
            "--cgroup {}: not a cgroup v2 directory (cgroup v2 is mounted at {}; a v1 hierarchy such as /sys/fs/cgroup/cpu cannot be matched by id)",
            path.display(),
            cgroup2_mounts().first().map_or("nowhere".to_string(), |m| m.display().to_string())
        )));
    }
    let root = cgroup2_mounts()
        .into_iter()
        .filter(|m| dir.starts_with(m))
        .max_by_key(|m| m.as_os_str().len())
        .ok_or_else(|| {
            bad(format!(
                "--cgroup {}: no cgroup2 mount holds it",
                path.display()
            ))
        })?;
    let level = dir
        .strip_prefix(&root)
        .map(|rest| rest.components().count() as u32)
        .unwrap_or(0);
    let id = std::fs::metadata(&dir)
        .map_err(|e| bad(format!("--cgroup {}: {e}", path.display())))?
        .ino();
    Ok(CgroupTarget { id, level })
}

/// Mount points of cgroup v2 (from `/proc/self/mountinfo`).
pub fn cgroup2_mounts() -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            (post.split_whitespace().next()? == "cgroup2")
                .then(|| pre.split_whitespace().nth(4).map(PathBuf::from))?
        })
        .collect()
}
