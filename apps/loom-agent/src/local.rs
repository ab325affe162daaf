//! Finding the local loom-app an agent feeds, so `--all` leaves it out
//! (tracing it would trace the act of storing the trace).

use std::net::{SocketAddr, ToSocketAddrs};

/// The pid of the process listening on `to`'s port when `to` is an address
/// of this host (loopback), else `None`.
pub fn local_listener_pid(to: &str) -> Option<u32> {
    let addr: SocketAddr = to.to_socket_addrs().ok()?.next()?;
    if !addr.ip().is_loopback() {
        return None;
    }
    let inode = listening_inode(addr.port())?;
    let want = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == want.as_str()) {
                return Some(pid);
            }
        }
    }
    None
}

/// The socket inode listening on TCP `port` (IPv4 or IPv6).
fn listening_inode(port: u16) -> Option<u64> {
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let p = local
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if *state == "0A" && p == Some(port) {
                return inode.parse().ok();
            }
        }
    }
    None
}
