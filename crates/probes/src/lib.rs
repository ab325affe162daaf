//! eBPF probes of the monitored application and their loader.
//!
//! Three programs, one per file under `src/bpf/` with the shared event header
//! `events.h`:
//! - **syscall latency** (`raw_syscalls/sys_enter` + `sys_exit`): one
//!   [`SyscallEvent`] per finished syscall, duration computed in the kernel;
//! - **page cache** (`filemap/mm_filemap_add_to_page_cache`): one
//!   [`PageCacheEvent`] per inserted folio;
//! - **packet** (tcx ingress of an interface, `lo` by default): one
//!   [`PacketEvent`] per TCP/UDP packet from or to one port.
//!
//! The tracepoint probes filter in the kernel by target process (set before load) and skip
//! excluded threads (the collector's own), write to BPF ring buffers and count
//! ring-buffer overflows in a map, reported in [`ProbeStats`]. [`ProbeHandle`]
//! loads them and streams batches of [`ProbeEvent`] to a crossbeam channel;
//! [`ProbeEvent::to_record`] turns an event into its telemetry record.
//!
//! [`agent`] holds `loom-agent`'s probes: the same measurements plus block
//! I/O and run-queue latency, filtered in the kernel on pids, process names,
//! cgroup v2 subtrees or the whole host.
//!
//! Loading needs root (or CAP_BPF + CAP_PERFMON), kernel BTF and tracefs;
//! [`ProbeHandle::start`] says which is missing.

pub mod agent;
mod config;
mod environment;
mod error;
mod event;
mod loader;
mod packet;
mod skel;

pub use config::ProbeConfig;
pub use environment::{check_kernel_btf, ensure_tracefs, KERNEL_BTF, TRACEFS};
pub use error::ProbeError;
pub use event::{PacketEvent, PageCacheEvent, ProbeEvent, SyscallEvent};
pub use loader::{ProbeHandle, ProbeStats};

/// x86_64 syscall number of `pread64`.
pub const SYS_PREAD64: u32 = 17;
