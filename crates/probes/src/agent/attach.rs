//! Opening, loading and attaching the agent's BPF object, filling its
//! filter maps, and the consumer loop over its four ring buffers.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, MapMut, RingBufferBuilder, TracepointCategory};

use super::event::{AgentBlockIo, AgentEvent, AgentPageCache, AgentRunQueue, AgentSyscall};
use super::fentry::{kernel_names, FentryTarget};
use super::plan::SyscallPlan;
use super::target::CgroupTarget;
use super::{AgentProbeConfig, EventSink, Shared, SyscallAttach, SyscallSelection, PACKET_PROBE};
use crate::event::{PacketEvent, RawEvent};
use crate::packet::PacketProbe;
use crate::skel::agent::{AgentSkel, AgentSkelBuilder};
use crate::ProbeError;

// Must match agent_events.h.
const TARGET_ALL: u32 = 1;
const TARGET_PID: u32 = 2;
const TARGET_COMM: u32 = 4;
const TARGET_CGROUP: u32 = 8;
const FOLLOW_CHILDREN: u32 = 16;
const SYSCALL_LIST: u32 = 32;
const MAX_SYSCALL_NR: u32 = 1024;
const DROP_READ_INTERVAL: Duration = Duration::from_millis(200);

fn err(step: &str) -> impl FnOnce(libbpf_rs::Error) -> ProbeError + '_ {
    move |e| ProbeError::libbpf(step, e)
}

/// Thread body: load, attach, report readiness (with the syscall
/// attachment finally taken), poll until stopped.
pub(super) fn run(
    config: AgentProbeConfig,
    mut plan: Option<SyscallPlan>,
    cgroups: Vec<CgroupTarget>,
    sink: Box<dyn EventSink>,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    ready: Sender<Result<Option<SyscallPlan>, ProbeError>>,
) -> Result<(), ProbeError> {
    let mut storage = MaybeUninit::uninit();
    let mut retry_storage = MaybeUninit::uninit();
    let mut packet_storage = MaybeUninit::uninit();
    let mut loaded = load(&config, plan.as_ref(), &cgroups, &mut storage);
    // A kernel whose BTF names the functions may still refuse fentry (no
    // BPF trampoline): `Auto` then falls back, saying why.
    if let (Err(e), Some(p)) = (&loaded, &plan) {
        if p.mode == SyscallAttach::Fentry {
            let why = match e {
                ProbeError::PermissionDenied { .. } => {
                    "the kernel refuses fentry programs (EPERM as root: BPF trampolines \
                     disabled or restricted here)"
                        .to_string()
                }
                e => format!("loading the fentry programs failed: {e}"),
            };
            if !p.auto {
                let _ = ready.send(Err(ProbeError::InvalidConfig(format!(
                    "--syscall-attach fentry: {why}; use --syscall-attach tracepoint"
                ))));
                return Ok(());
            }
            let fallback = SyscallPlan::without_fentry(p.fentry.len(), why);
            log::warn!("syscall probe: {fallback}");
            plan = Some(fallback);
            loaded = load(&config, plan.as_ref(), &cgroups, &mut retry_storage);
        }
    }
    let loaded = loaded.and_then(|(skel, links)| {
        let packets = match &config.packets {
            Some(p) => Some(PacketProbe::attach(
                &mut packet_storage,
                &p.interface,
                p.port.unwrap_or(0),
                config.ring_buffer_bytes,
                config.wakeup_bytes,
            )?),
            None => None,
        };
        Ok((skel, links, packets))
    });
    let (skel, links, packets) = match loaded {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return Ok(());
        }
    };
    let r = poll(
        &config,
        (&skel, packets.as_ref()),
        sink,
        &shared,
        &stop,
        || {
            let _ = ready.send(Ok(plan));
        },
    );
    drop(packets);
    drop(links);
    r
}

fn load<'obj>(
    config: &AgentProbeConfig,
    plan: Option<&SyscallPlan>,
    cgroups: &[CgroupTarget],
    storage: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
) -> Result<(AgentSkel<'obj>, Vec<Link>), ProbeError> {
    let t = &config.targets;
    let mode = plan.map(|p| p.mode);
    let fentry: &[FentryTarget] = plan.map_or(&[], |p| &p.fentry);
    let mut open = AgentSkelBuilder::default()
        .open(storage)
        .map_err(err("opening the agent probes"))?;
    let mut flags = 0;
    for (on, f) in [
        (t.all, TARGET_ALL),
        (!t.pids.is_empty(), TARGET_PID),
        (!t.comms.is_empty(), TARGET_COMM),
        (!cgroups.is_empty(), TARGET_CGROUP),
        (t.follow_children && !t.pids.is_empty(), FOLLOW_CHILDREN),
        (
            mode == Some(SyscallAttach::Raw)
                && matches!(config.syscalls, Some(SyscallSelection::List(_))),
            SYSCALL_LIST,
        ),
    ] {
        if on {
            flags |= f;
        }
    }
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or_else(|| ProbeError::Libbpf {
            step: "opening the agent probes".into(),
            detail: "no .rodata section".into(),
        })?;
    rodata.filter_flags = flags;
    rodata.n_cgroups = cgroups.len() as u32;
    rodata.wakeup_bytes = config.wakeup_bytes;
    for (slot, f) in rodata.slot_nr.iter_mut().zip(fentry) {
        *slot = f.nr;
    }
    let raw = mode == Some(SyscallAttach::Raw);
    let per = mode == Some(SyscallAttach::PerSyscall);
    let p = &mut open.progs;
    p.raw_sys_enter.set_autoload(raw);
    p.raw_sys_exit.set_autoload(raw);
    p.one_sys_enter.set_autoload(per);
    p.one_sys_exit.set_autoload(per);
    p.pagecache_add.set_autoload(config.page_cache);
    p.blockio_start.set_autoload(config.blockio);
    p.blockio_issue.set_autoload(config.blockio);
    p.blockio_complete.set_autoload(config.blockio);
    p.runqueue_wakeup.set_autoload(config.runqueue);
    p.runqueue_wakeup_new.set_autoload(config.runqueue);
    p.runqueue_switch.set_autoload(config.runqueue);
    p.follow_fork.set_autoload(flags & FOLLOW_CHILDREN != 0);
    for mut prog in open.open_object_mut().progs_mut() {
        let Some(i) = slot_of(prog.name()) else {
            continue;
        };
        let target = fentry
            .get(i)
            .filter(|_| mode == Some(SyscallAttach::Fentry));
        prog.set_autoload(target.is_some());
        if let Some(f) = target {
            prog.set_attach_target(0, Some(f.function.clone()))
                .map_err(|e| ProbeError::libbpf(format!("pointing a slot at {}", f.function), e))?;
        }
    }
    let m = &mut open.maps;
    for (on, map) in [
        (mode.is_some(), &mut m.syscall_events),
        (config.page_cache, &mut m.pagecache_events),
        (config.blockio, &mut m.blockio_events),
        (config.runqueue, &mut m.runqueue_events),
    ] {
        map.set_max_entries(if on { config.ring_buffer_bytes } else { 4096 })
            .map_err(err("sizing a ring buffer"))?;
    }
    let skel = open.load().map_err(err("loading the agent probes"))?;
    fill_maps(&skel, config, cgroups)?;
    let mut links = attach(&skel, config, mode)?;
    if mode == Some(SyscallAttach::Fentry) {
        for prog in skel.object().progs_mut() {
            if slot_of(prog.name()).is_some() && prog.autoload() {
                let name = prog.name().to_string_lossy().into_owned();
                links.push(
                    prog.attach()
                        .map_err(|e| ProbeError::libbpf(format!("attaching {name}"), e))?,
                );
            }
        }
    }
    Ok((skel, links))
}

/// The fentry/fexit slot a program is (`sys_entry_N` / `sys_exit_N`).
fn slot_of(name: &std::ffi::OsStr) -> Option<usize> {
    let name = name.to_str()?;
    name.strip_prefix("sys_entry_")
        .or_else(|| name.strip_prefix("sys_exit_"))?
        .parse()
        .ok()
}

fn put(map: &MapMut<'_>, key: &[u8], value: &[u8], what: &str) -> Result<(), ProbeError> {
    map.update(key, value, MapFlags::ANY)
        .map_err(|e| ProbeError::libbpf(format!("filling {what}"), e))
}

fn fill_maps(
    skel: &AgentSkel<'_>,
    config: &AgentProbeConfig,
    cgroups: &[CgroupTarget],
) -> Result<(), ProbeError> {
    let t = &config.targets;
    let m = &skel.maps;
    for pid in &t.pids {
        put(&m.target_tgids, &pid.to_ne_bytes(), &[1], "the target pids")?;
    }
    for c in &t.comms {
        let mut key = [0u8; 16];
        key[..c.len()].copy_from_slice(c.as_bytes());
        put(&m.target_comms, &key, &[1], "the target names")?;
    }
    for (i, c) in cgroups.iter().enumerate() {
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&c.id.to_ne_bytes());
        v[8..12].copy_from_slice(&c.level.to_ne_bytes());
        put(
            &m.target_cgroups,
            &(i as u32).to_ne_bytes(),
            &v,
            "the target cgroups",
        )?;
    }
    for pid in &t.exclude_pids {
        put(
            &m.excluded_tgids,
            &pid.to_ne_bytes(),
            &[1],
            "the excluded pids",
        )?;
    }
    if let Some(SyscallSelection::List(l)) = &config.syscalls {
        for nr in l.iter().filter(|&&n| n < MAX_SYSCALL_NR) {
            put(&m.syscall_list, &nr.to_ne_bytes(), &[1], "the syscall list")?;
        }
    }
    Ok(())
}

fn attach(
    skel: &AgentSkel<'_>,
    config: &AgentProbeConfig,
    mode: Option<SyscallAttach>,
) -> Result<Vec<Link>, ProbeError> {
    let p = &skel.progs;
    let mut links = Vec::new();
    match (mode, &config.syscalls) {
        (Some(SyscallAttach::Raw), _) => {
            links.push(
                p.raw_sys_enter
                    .attach()
                    .map_err(err("attaching raw_syscalls:sys_enter"))?,
            );
            links.push(
                p.raw_sys_exit
                    .attach()
                    .map_err(err("attaching raw_syscalls:sys_exit"))?,
            );
        }
        (Some(SyscallAttach::PerSyscall), Some(SyscallSelection::List(l))) => {
            for &nr in l {
                let name = telemetry::model::syscall_name(nr);
                // The tracepoints carry the kernel's name (`stat` is
                // `sys_enter_newstat`): the first that exists.
                let kernel_names = kernel_names(&name);
                for (prog, dir) in [(&p.one_sys_enter, "enter"), (&p.one_sys_exit, "exit")] {
                    let mut last = None;
                    for k in &kernel_names {
                        let tp = format!("sys_{dir}_{k}");
                        match prog.attach_tracepoint(TracepointCategory::Syscalls, &tp) {
                            Ok(link) => {
                                links.push(link);
                                last = None;
                                break;
                            }
                            Err(e) => last = Some(e),
                        }
                    }
                    if let Some(e) = last {
                        return Err(ProbeError::Libbpf {
                            step: format!("attaching syscalls:sys_{dir}_{name}"),
                            detail: format!(
                                "{e:#} (this kernel has no tracepoint for {name}; use --syscall-attach raw)"
                            ),
                        });
                    }
                }
            }
        }
        (Some(SyscallAttach::PerSyscall), _) => {
            return Err(ProbeError::InvalidConfig(
                "per-syscall tracepoints need a syscall list".into(),
            ))
        }
        // Fentry slots are attached by the caller; Auto never gets here.
        (Some(_), _) | (None, _) => {}
    }
    let mut auto = |on: bool, prog: &libbpf_rs::ProgramMut<'_>, what: &str| {
        if on {
            links.push(
                prog.attach()
                    .map_err(|e| ProbeError::libbpf(format!("attaching {what}"), e))?,
            );
        }
        Ok::<(), ProbeError>(())
    };
    auto(
        config.page_cache,
        &p.pagecache_add,
        "filemap:mm_filemap_add_to_page_cache",
    )?;
    auto(config.blockio, &p.blockio_start, "block:block_io_start")?;
    auto(config.blockio, &p.blockio_issue, "block:block_rq_issue")?;
    auto(
        config.blockio,
        &p.blockio_complete,
        "block:block_rq_complete",
    )?;
    auto(config.runqueue, &p.runqueue_wakeup, "sched:sched_wakeup")?;
    auto(
        config.runqueue,
        &p.runqueue_wakeup_new,
        "sched:sched_wakeup_new",
    )?;
    auto(config.runqueue, &p.runqueue_switch, "sched:sched_switch")?;
    let follow = config.targets.follow_children && !config.targets.pids.is_empty();
    auto(follow, &p.follow_fork, "sched:sched_process_fork")?;
    Ok(links)
}

/// Collects events into batches for the sink.
struct Batcher<'a> {
    sink: Box<dyn EventSink>,
    batch: Vec<AgentEvent>,
    size: usize,
    shared: &'a Shared,
}

impl Batcher<'_> {
    fn push(&mut self, probe: usize, e: AgentEvent) {
        self.shared.events[probe].fetch_add(1, Ordering::Relaxed);
        self.batch.push(e);
        if self.batch.len() >= self.size {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        if !self.batch.is_empty() {
            self.sink.take(&self.batch);
            self.batch.clear();
        }
    }

    /// Hands over what the round read and ends the sink's round.
    fn end_round(&mut self) {
        self.hand_over();
        self.sink.round();
    }
}

fn poll(
    config: &AgentProbeConfig,
    (skel, packets): (&AgentSkel<'_>, Option<&PacketProbe<'_>>),
    sink: Box<dyn EventSink>,
    shared: &Shared,
    stop: &AtomicBool,
    on_ready: impl FnOnce(),
) -> Result<(), ProbeError> {
    let batcher = Rc::new(RefCell::new(Batcher {
        sink,
        batch: Vec::with_capacity(config.batch_size),
        size: config.batch_size,
        shared,
    }));
    let mut builder = RingBufferBuilder::new();
    let m = &skel.maps;
    macro_rules! ring {
        ($on:expr, $map:expr, $ty:ty, $variant:ident, $probe:expr) => {
            if $on {
                let b = batcher.clone();
                builder
                    .add(&$map, move |data: &[u8]| {
                        if let Some(e) = <$ty>::read(data) {
                            b.borrow_mut().push($probe, AgentEvent::$variant(e));
                        }
                        0
                    })
                    .map_err(err("adding a ring buffer"))?;
            }
        };
    }
    ring!(
        config.syscalls.is_some(),
        m.syscall_events,
        AgentSyscall,
        Syscall,
        0
    );
    ring!(
        config.page_cache,
        m.pagecache_events,
        AgentPageCache,
        PageCache,
        1
    );
    ring!(config.blockio, m.blockio_events, AgentBlockIo, BlockIo, 2);
    ring!(
        config.runqueue,
        m.runqueue_events,
        AgentRunQueue,
        RunQueue,
        3
    );
    if let Some(p) = packets {
        let b = batcher.clone();
        builder
            .add(&p.skel.maps.events, move |data: &[u8]| {
                if let Some(e) = PacketEvent::read(data) {
                    b.borrow_mut().push(PACKET_PROBE, AgentEvent::Packet(e));
                }
                0
            })
            .map_err(err("adding the packet ring buffer"))?;
    }
    let ring = builder
        .build()
        .map_err(err("creating the ring buffer consumer"))?;
    on_ready();
    let mut last_drops = Instant::now();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let rc = ring.poll_raw(config.poll_interval);
        if rc < 0 && rc != -libc::EINTR {
            return Err(ProbeError::Libbpf {
                step: "polling the ring buffers".into(),
                detail: std::io::Error::from_raw_os_error(-rc).to_string(),
            });
        }
        let _ = ring.consume_raw();
        batcher.borrow_mut().end_round();
        if stopping || last_drops.elapsed() >= DROP_READ_INTERVAL {
            read_drops(&m.drops, shared)?;
            if let Some(p) = packets {
                shared.kernel_drops[PACKET_PROBE].store(p.kernel_drops()?, Ordering::Relaxed);
            }
            last_drops = Instant::now();
        }
        if stopping {
            return Ok(());
        }
    }
}

fn read_drops(map: &MapMut<'_>, shared: &Shared) -> Result<(), ProbeError> {
    for i in 0..4u32 {
        let values = map
            .lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)
            .map_err(err("reading the drop counters"))?;
        let sum: u64 = values
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()))
            .map(u64::from_ne_bytes)
            .sum();
        shared.kernel_drops[i as usize].store(sum, Ordering::Relaxed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::slot_of;
    use std::ffi::OsStr;

    #[test]
    fn only_the_slot_programs_have_a_slot() {
        assert_eq!(slot_of(OsStr::new("sys_entry_0")), Some(0));
        assert_eq!(slot_of(OsStr::new("sys_exit_31")), Some(31));
        for other in ["one_sys_enter", "raw_sys_exit", "sys_entry_", "sys_exit_x"] {
            assert_eq!(slot_of(OsStr::new(other)), None, "{other}");
        }
    }
}
