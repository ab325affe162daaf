//! loom-agent's probes (`src/bpf/agent.bpf.c`): syscall latency, page-cache
//! insertions, block I/O latency and run-queue latency, filtered in the
//! kernel on a [`Targets`] selection, handed in batches of [`AgentEvent`]s
//! to an [`EventSink`] on the probe thread, with per-probe counts of events
//! and ring-buffer drops.
//!
//! Syscalls are attached by [`SyscallAttach`]: fentry/fexit on the listed
//! syscalls' kernel functions run only for those calls and leave every
//! other syscall of the host on its fast path; per-syscall tracepoints
//! (`syscalls:sys_enter_NAME`) also run programs only for the listed calls,
//! but enabling any of them sends every syscall of every task through the
//! tracepoint slow path; `raw_syscalls` `sys_enter`/`sys_exit` run the
//! filter on every syscall of the host. [`plan::plan`] chooses for `Auto`.

mod attach;
pub mod event;
pub mod fentry;
pub mod plan;
pub mod target;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use event::AgentEvent;
pub use target::Targets;

use crate::environment::{check_kernel_btf, ensure_tracefs};
use crate::ProbeError;

/// Longest syscall list `Auto` attaches call by call.
pub const PER_SYSCALL_MAX: usize = 64;

/// Which syscalls to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyscallSelection {
    /// Every syscall.
    All,
    /// These numbers (x86_64).
    List(Vec<u32>),
}

/// Which packets to record: TCP/UDP packets arriving at an interface's
/// TC ingress hook, to or from one port. Packets have no task in the
/// kernel's ingress path, so the process targets do not apply to them:
/// the interface and port select them, in the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketSelection {
    /// Interface name (e.g. `lo`, `eth0`).
    pub interface: String,
    /// Source or destination port to keep (`None`: every port).
    pub port: Option<u16>,
}

impl std::str::FromStr for PacketSelection {
    type Err = String;

    /// `IFACE` or `IFACE:PORT`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (interface, port) = match s.rsplit_once(':') {
            Some((i, p)) => {
                let port: u16 = p
                    .parse()
                    .map_err(|_| format!("{s:?}: the port after ':' must be 1-65535"))?;
                if port == 0 {
                    return Err(format!("{s:?}: the port after ':' must be 1-65535"));
                }
                (i, Some(port))
            }
            None => (s, None),
        };
        if interface.is_empty() || interface.len() > 15 || interface.contains('/') {
            return Err(format!(
                "{s:?}: expected IFACE or IFACE:PORT (an interface name of 1-15 characters)"
            ));
        }
        Ok(PacketSelection {
            interface: interface.to_string(),
            port,
        })
    }
}

/// How the syscall probe attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyscallAttach {
    /// fentry for a list the kernel supports, per-syscall tracepoints for
    /// other short lists, raw tracepoints otherwise ([`plan::plan`]).
    #[default]
    Auto,
    /// fentry/fexit on each listed syscall's kernel function
    /// (`__x64_sys_NAME`), at most [`fentry::FENTRY_SLOTS`].
    Fentry,
    /// `raw_syscalls:sys_enter` / `sys_exit`.
    Raw,
    /// `syscalls:sys_enter_NAME` / `sys_exit_NAME` for each listed syscall.
    PerSyscall,
}

/// The agent's probes and their delivery settings.
#[derive(Debug, Clone)]
pub struct AgentProbeConfig {
    /// What to watch.
    pub targets: Targets,
    /// Syscalls to record (`None`: syscall probe off).
    pub syscalls: Option<SyscallSelection>,
    /// How the syscall probe attaches.
    pub syscall_attach: SyscallAttach,
    /// Page-cache insertions.
    pub page_cache: bool,
    /// Block I/O latency.
    pub blockio: bool,
    /// Run-queue latency.
    pub runqueue: bool,
    /// Packets at an interface's TC ingress (`None`: off).
    pub packets: Option<PacketSelection>,
    /// Bytes of each used ring buffer (a power of two ≥ 4096).
    pub ring_buffer_bytes: u32,
    /// Wake the consumer once this many bytes wait.
    pub wakeup_bytes: u64,
    /// Longest wait of an event in a ring buffer.
    pub poll_interval: Duration,
    /// Most events per [`EventSink::take`].
    pub batch_size: usize,
}

impl Default for AgentProbeConfig {
    fn default() -> Self {
        AgentProbeConfig {
            targets: Targets::default(),
            syscalls: Some(SyscallSelection::All),
            syscall_attach: SyscallAttach::Auto,
            page_cache: false,
            blockio: false,
            runqueue: false,
            packets: None,
            ring_buffer_bytes: 4 << 20,
            wakeup_bytes: 256 << 10,
            poll_interval: Duration::from_millis(50),
            batch_size: 1024,
        }
    }
}

/// The probes, in the order of their counters: the codes of the `agent`
/// measurement's `probe` tag (one list, in `telemetry`).
pub const PROBE_NAMES: [&str; PROBES] = telemetry::agent_names::PROBES;
/// How many probes the agent has.
pub const PROBES: usize = telemetry::agent_names::PROBES.len();
/// Index of the packet probe in [`PROBE_NAMES`].
pub const PACKET_PROBE: usize = 4;

/// Counts per probe (index as [`PROBE_NAMES`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentStats {
    /// Events received from the kernel.
    pub events: [u64; PROBES],
    /// Events the kernel dropped on a full ring buffer.
    pub kernel_drops: [u64; PROBES],
}

#[derive(Default)]
pub(crate) struct Shared {
    events: [AtomicU64; PROBES],
    kernel_drops: [AtomicU64; PROBES],
}

impl Shared {
    fn snapshot(&self) -> AgentStats {
        let load = |a: &[AtomicU64; PROBES]| std::array::from_fn(|i| a[i].load(Ordering::Relaxed));
        AgentStats {
            events: load(&self.events),
            kernel_drops: load(&self.kernel_drops),
        }
    }
}

/// Where the probe thread hands what it reads, on that thread: the agent
/// encodes events where they are read, so no batch crosses a channel and
/// no second thread wakes per batch (each wake-up costs CPU at every
/// event rate). A sink must not block for long: the rings fill meanwhile,
/// and the kernel drops (and counts) what does not fit.
pub trait EventSink: Send + 'static {
    /// Takes a batch of events (at most `batch_size`), in ring order.
    fn take(&mut self, events: &[AgentEvent]);
    /// Ends a round of ring reads: called after each poll of the rings,
    /// at least every `poll_interval` and also when nothing arrived, and
    /// once more after the last events when the probes stop.
    fn round(&mut self);
}

/// Running agent probes; dropping it detaches them.
pub struct AgentProbes {
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Result<(), ProbeError>>>,
    /// How the syscall probe attached (`None`: not loaded).
    pub syscall_plan: Option<plan::SyscallPlan>,
}

impl AgentProbes {
    /// Checks the machine and the targets, loads and attaches the probes
    /// and starts handing batches to `sink` on the probe thread; returns
    /// once attached. The sink is dropped when the probe thread ends.
    pub fn start(
        config: AgentProbeConfig,
        sink: impl EventSink,
    ) -> Result<AgentProbes, ProbeError> {
        let task_probes =
            config.syscalls.is_some() || config.page_cache || config.blockio || config.runqueue;
        // Packets have no task at ingress: with the packet probe alone no
        // process target is needed.
        let cgroups = if task_probes || config.packets.is_none() {
            config.targets.check()?
        } else {
            Vec::new()
        };
        if !config.ring_buffer_bytes.is_power_of_two() || config.ring_buffer_bytes < 4096 {
            return Err(ProbeError::InvalidConfig(format!(
                "ring buffer bytes must be a power of two >= 4096, got {}",
                config.ring_buffer_bytes
            )));
        }
        if config.syscalls.is_none()
            && !config.page_cache
            && !config.blockio
            && !config.runqueue
            && config.packets.is_none()
        {
            return Err(ProbeError::InvalidConfig(
                "no probe selected: give --syscalls, --page-cache, --blockio, --runqueue or --packets".into(),
            ));
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 && !has_bpf_capabilities() {
            return Err(ProbeError::PermissionDenied {
                step: "checking privileges".into(),
                detail: "loading eBPF programs needs root or CAP_BPF + CAP_PERFMON".into(),
            });
        }
        check_kernel_btf()?;
        if config.syscalls.is_some() || config.page_cache {
            ensure_tracefs(true)?;
        }
        let plan = config
            .syscalls
            .as_ref()
            .map(|s| plan::plan(s, config.syscall_attach))
            .transpose()?;
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let thread = {
            let (stop, shared) = (stop.clone(), shared.clone());
            std::thread::Builder::new()
                .name("agent-probes".into())
                .spawn(move || {
                    attach::run(
                        config,
                        plan,
                        cgroups,
                        Box::new(sink),
                        shared,
                        stop,
                        ready_tx,
                    )
                })?
        };
        match ready_rx.recv() {
            Ok(Ok(plan)) => Ok(AgentProbes {
                stop,
                shared,
                thread: Some(thread),
                syscall_plan: plan,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => match thread.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(ProbeError::ConsumerDied),
            },
        }
    }

    /// Current counters.
    pub fn stats(&self) -> AgentStats {
        self.shared.snapshot()
    }

    /// Detaches, delivers what is left in the ring buffers, and returns the
    /// final counters.
    pub fn stop(mut self) -> Result<AgentStats, ProbeError> {
        self.shutdown()?;
        Ok(self.shared.snapshot())
    }

    fn shutdown(&mut self) -> Result<(), ProbeError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| ProbeError::ConsumerDied)?,
            None => Ok(()),
        }
    }
}

impl Drop for AgentProbes {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            log::warn!("agent probes stopped with an error: {e}");
        }
    }
}

/// True when the effective capability set holds CAP_BPF (39) and
/// CAP_PERFMON (38).
fn has_bpf_capabilities() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 39) != 0 && caps & (1 << 38) != 0)
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, ns: added to a kernel event time
/// (`bpf_ktime_get_ns`) it gives wall-clock ns.
pub fn monotonic_to_wall_ns() -> u64 {
    let read = |clock| {
        // SAFETY: clock_gettime writes the zeroed timespec.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    // The tightest of a few samples: the pair read closest together.
    (0..5)
        .map(|_| {
            let m0 = read(libc::CLOCK_MONOTONIC);
            let r = read(libc::CLOCK_REALTIME);
            let m1 = read(libc::CLOCK_MONOTONIC);
            (m1 - m0, r.saturating_sub(m0 / 2 + m1 / 2))
        })
        .min_by_key(|&(gap, _)| gap)
        .map_or(0, |(_, off)| off)
}
