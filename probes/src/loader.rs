//! Loads and attaches the probes and streams their events in batches.
//!
//! One consumer thread owns the BPF objects: it loads them (with the target
//! process and wakeup threshold as `const volatile` settings), excludes its own
//! thread id and the configured ones, attaches, and then polls both ring
//! buffers, sending `Vec<ProbeEvent>` batches to a crossbeam channel. A full
//! channel never blocks the consumer (that would overflow the ring buffers):
//! the batch is dropped and counted.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, MapMut, OpenObject, RingBufferBuilder};

use crate::environment::{check_kernel_btf, ensure_tracefs};
use crate::event::{PacketEvent, PageCacheEvent, ProbeEvent, RawEvent, SyscallEvent};
use crate::skel::packet::{PacketSkel, PacketSkelBuilder};
use crate::skel::page_cache::{PageCacheSkel, PageCacheSkelBuilder};
use crate::skel::syscall_latency::{SyscallLatencySkel, SyscallLatencySkelBuilder};
use crate::{ProbeConfig, ProbeError};

/// How often kernel drop counters are read while running.
const DROP_COUNTER_INTERVAL: Duration = Duration::from_millis(200);
/// Must match MAX_EXCLUDED_TIDS in `src/bpf/events.h`.
const MAX_EXCLUDED_TIDS: usize = 1024;

/// Counters of a running probe set. All counts are events, not batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeStats {
    /// Syscall events received from the kernel.
    pub syscall_events: u64,
    /// Page-cache events received from the kernel.
    pub page_cache_events: u64,
    /// Packet events received from the kernel.
    pub packet_events: u64,
    /// Syscall events the kernel dropped because the ring buffer was full.
    pub syscall_kernel_drops: u64,
    /// Page-cache events the kernel dropped because the ring buffer was full.
    pub page_cache_kernel_drops: u64,
    /// Packet events the kernel dropped because the ring buffer was full.
    pub packet_kernel_drops: u64,
    /// Events received but dropped because the output channel was full.
    pub channel_drops: u64,
}

impl ProbeStats {
    /// Events lost in the kernel (every probe).
    pub fn kernel_drops(&self) -> u64 {
        self.syscall_kernel_drops + self.page_cache_kernel_drops + self.packet_kernel_drops
    }
}

#[derive(Default)]
struct SharedStats {
    syscall_events: AtomicU64,
    page_cache_events: AtomicU64,
    packet_events: AtomicU64,
    syscall_kernel_drops: AtomicU64,
    page_cache_kernel_drops: AtomicU64,
    packet_kernel_drops: AtomicU64,
    channel_drops: AtomicU64,
}

impl SharedStats {
    fn snapshot(&self) -> ProbeStats {
        ProbeStats {
            syscall_events: self.syscall_events.load(Ordering::Relaxed),
            page_cache_events: self.page_cache_events.load(Ordering::Relaxed),
            packet_events: self.packet_events.load(Ordering::Relaxed),
            syscall_kernel_drops: self.syscall_kernel_drops.load(Ordering::Relaxed),
            page_cache_kernel_drops: self.page_cache_kernel_drops.load(Ordering::Relaxed),
            packet_kernel_drops: self.packet_kernel_drops.load(Ordering::Relaxed),
            channel_drops: self.channel_drops.load(Ordering::Relaxed),
        }
    }
}

/// Running probes. Dropping the handle detaches them (like [`ProbeHandle::stop`]
/// without the final statistics).
pub struct ProbeHandle {
    stop: Arc<AtomicBool>,
    stats: Arc<SharedStats>,
    exclude: Sender<u32>,
    consumer_tid: u32,
    thread: Option<JoinHandle<Result<(), ProbeError>>>,
}

impl ProbeHandle {
    /// Loads and attaches the probes chosen in `config` and starts streaming
    /// their events to `out` in batches of up to `config.batch_size`.
    ///
    /// Returns once the probes are attached: events of anything the target
    /// does afterwards are captured. Fails with an error naming the fix when
    /// the machine cannot load them (not root, no BTF, no tracefs, no such
    /// interface).
    pub fn start(
        config: ProbeConfig,
        out: Sender<Vec<ProbeEvent>>,
    ) -> Result<ProbeHandle, ProbeError> {
        validate(&config)?;
        check_kernel_btf()?;
        // Only the tracepoint probes need tracefs; the packet probe is a tcx link.
        if config.syscalls || config.page_cache {
            ensure_tracefs(config.mount_tracefs)?;
        }

        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SharedStats::default());
        let (exclude_tx, exclude_rx) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let thread = {
            let stop = stop.clone();
            let stats = stats.clone();
            std::thread::Builder::new()
                .name("probe-consumer".to_string())
                .spawn(move || consume(config, out, stats, stop, exclude_rx, ready_tx))?
        };
        match ready_rx.recv() {
            Ok(Ok(consumer_tid)) => Ok(ProbeHandle {
                stop,
                stats,
                exclude: exclude_tx,
                consumer_tid,
                thread: Some(thread),
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
    pub fn stats(&self) -> ProbeStats {
        self.stats.snapshot()
    }

    /// Thread id of the consumer thread (excluded from tracing).
    pub fn consumer_tid(&self) -> u32 {
        self.consumer_tid
    }

    /// Stops tracing thread `tid` from the consumer's next poll on (at most
    /// `poll_interval` later). Ignored once 1024 threads are excluded.
    pub fn exclude_tid(&self, tid: u32) {
        // The receiver lives as long as the consumer; after it ended there is
        // nothing left to exclude from.
        let _ = self.exclude.send(tid);
    }

    /// Detaches the probes, delivers the events still in the ring buffers and
    /// returns the final counters.
    pub fn stop(mut self) -> Result<ProbeStats, ProbeError> {
        self.shutdown()?;
        Ok(self.stats.snapshot())
    }

    fn shutdown(&mut self) -> Result<(), ProbeError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| ProbeError::ConsumerDied)?,
            None => Ok(()),
        }
    }
}

impl Drop for ProbeHandle {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            log::warn!("probes stopped with an error: {e}");
        }
    }
}

fn validate(config: &ProbeConfig) -> Result<(), ProbeError> {
    if !config.syscalls && !config.page_cache && config.packets.is_none() {
        return Err(ProbeError::InvalidConfig("no probe selected".to_string()));
    }
    let rb = config.ring_buffer_bytes;
    if !rb.is_power_of_two() || rb < 4096 {
        return Err(ProbeError::InvalidConfig(format!(
            "ring_buffer_bytes must be a power of two >= 4096, got {rb}"
        )));
    }
    if config.batch_size == 0 {
        return Err(ProbeError::InvalidConfig(
            "batch_size must be > 0".to_string(),
        ));
    }
    if config.excluded_tids.len() + 1 > MAX_EXCLUDED_TIDS {
        return Err(ProbeError::InvalidConfig(format!(
            "at most {} excluded tids",
            MAX_EXCLUDED_TIDS - 1
        )));
    }
    Ok(())
}

fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Thread body: set up, report readiness, then poll until stopped.
fn consume(
    config: ProbeConfig,
    out: Sender<Vec<ProbeEvent>>,
    stats: Arc<SharedStats>,
    stop: Arc<AtomicBool>,
    exclude: Receiver<u32>,
    ready: Sender<Result<u32, ProbeError>>,
) -> Result<(), ProbeError> {
    let tid = gettid();
    let mut syscall_obj = MaybeUninit::uninit();
    let mut page_cache_obj = MaybeUninit::uninit();
    let mut packet_obj = MaybeUninit::uninit();
    let mut excluded = config.excluded_tids.clone();
    excluded.push(tid);
    let objects = Objects {
        syscall: &mut syscall_obj,
        page_cache: &mut page_cache_obj,
        packet: &mut packet_obj,
    };
    let probes = match Probes::attach(&config, &excluded, objects) {
        Ok(p) => p,
        Err(e) => {
            // The caller waits on `ready`; if it is gone there is no one to tell.
            let _ = ready.send(Err(e));
            return Ok(());
        }
    };
    let result = poll_loop(
        &config,
        &probes,
        out,
        &stats,
        &stop,
        &exclude,
        &mut excluded,
        || {
            let _ = ready.send(Ok(tid));
        },
    );
    if let Err(e) = &result {
        let _ = ready.send(Err(ProbeError::Libbpf {
            step: "ring buffer setup".to_string(),
            detail: e.to_string(),
        }));
    }
    result
}

/// Storage of the opened BPF objects (the skeletons borrow it).
struct Objects<'obj> {
    syscall: &'obj mut MaybeUninit<OpenObject>,
    page_cache: &'obj mut MaybeUninit<OpenObject>,
    packet: &'obj mut MaybeUninit<OpenObject>,
}

/// The loaded and attached BPF objects.
struct Probes<'obj> {
    syscall: Option<SyscallLatencySkel<'obj>>,
    page_cache: Option<PageCacheSkel<'obj>>,
    /// The tcx link: dropping it (also when the process dies) detaches the
    /// packet program; no qdisc is created, so nothing is left behind.
    packet_link: Option<Link>,
    packet: Option<PacketSkel<'obj>>,
}

impl<'obj> Probes<'obj> {
    fn attach(
        config: &ProbeConfig,
        excluded: &[u32],
        objects: Objects<'obj>,
    ) -> Result<Probes<'obj>, ProbeError> {
        let Objects {
            syscall: syscall_obj,
            page_cache: page_cache_obj,
            packet: packet_obj,
        } = objects;
        let target = config.target_tgid.unwrap_or(0);
        let err = |step: &str| {
            let step = step.to_string();
            move |e| ProbeError::libbpf(step, e)
        };
        let mut probes = Probes {
            syscall: None,
            page_cache: None,
            packet_link: None,
            packet: None,
        };
        if config.syscalls {
            let mut open = SyscallLatencySkelBuilder::default()
                .open(syscall_obj)
                .map_err(err("opening syscall_latency"))?;
            let rodata = open
                .maps
                .rodata_data
                .as_deref_mut()
                .ok_or_else(|| missing_rodata("syscall_latency"))?;
            rodata.target_tgid = target;
            rodata.wakeup_bytes = config.wakeup_bytes;
            open.maps
                .events
                .set_max_entries(config.ring_buffer_bytes)
                .map_err(err("sizing the syscall ring buffer"))?;
            let mut skel = open.load().map_err(err("loading syscall_latency"))?;
            exclude_tids(&skel.maps.excluded_tids, excluded)?;
            skel.attach()
                .map_err(err("attaching raw_syscalls/sys_enter+sys_exit"))?;
            probes.syscall = Some(skel);
        }
        if config.page_cache {
            let mut open = PageCacheSkelBuilder::default()
                .open(page_cache_obj)
                .map_err(err("opening page_cache"))?;
            let rodata = open
                .maps
                .rodata_data
                .as_deref_mut()
                .ok_or_else(|| missing_rodata("page_cache"))?;
            rodata.target_tgid = target;
            rodata.wakeup_bytes = config.wakeup_bytes;
            open.maps
                .events
                .set_max_entries(config.ring_buffer_bytes)
                .map_err(err("sizing the page-cache ring buffer"))?;
            let mut skel = open.load().map_err(err("loading page_cache"))?;
            exclude_tids(&skel.maps.excluded_tids, excluded)?;
            skel.attach()
                .map_err(err("attaching filemap/mm_filemap_add_to_page_cache"))?;
            probes.page_cache = Some(skel);
        }
        if let Some(port) = config.packets {
            let ifindex = interface_index(&config.packet_interface)?;
            let mut open = PacketSkelBuilder::default()
                .open(packet_obj)
                .map_err(err("opening packet"))?;
            let rodata = open
                .maps
                .rodata_data
                .as_deref_mut()
                .ok_or_else(|| missing_rodata("packet"))?;
            rodata.target_port = port;
            rodata.wakeup_bytes = config.wakeup_bytes;
            open.maps
                .events
                .set_max_entries(config.ring_buffer_bytes)
                .map_err(err("sizing the packet ring buffer"))?;
            let skel = open.load().map_err(err("loading packet"))?;
            probes.packet_link = Some(attach_tcx_ingress(
                &skel.progs.handle_ingress,
                ifindex,
                &config.packet_interface,
            )?);
            probes.packet = Some(skel);
        }
        Ok(probes)
    }

    fn exclude(&self, tids: &[u32]) -> Result<(), ProbeError> {
        if let Some(s) = &self.syscall {
            exclude_tids(&s.maps.excluded_tids, tids)?;
        }
        if let Some(s) = &self.page_cache {
            exclude_tids(&s.maps.excluded_tids, tids)?;
        }
        Ok(())
    }

    fn read_drops(&self, stats: &SharedStats) -> Result<(), ProbeError> {
        if let Some(s) = &self.syscall {
            stats
                .syscall_kernel_drops
                .store(sum_percpu(&s.maps.drops)?, Ordering::Relaxed);
        }
        if let Some(s) = &self.page_cache {
            stats
                .page_cache_kernel_drops
                .store(sum_percpu(&s.maps.drops)?, Ordering::Relaxed);
        }
        if let Some(s) = &self.packet {
            stats
                .packet_kernel_drops
                .store(sum_percpu(&s.maps.drops)?, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// The index of network interface `name`.
fn interface_index(name: &str) -> Result<i32, ProbeError> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| ProbeError::InvalidConfig(format!("interface name {name:?} has a NUL")))?;
    // SAFETY: `c` is a valid NUL-terminated string for the call.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        return Err(ProbeError::InvalidConfig(format!(
            "no network interface named {name:?}: {}",
            std::io::Error::last_os_error()
        )));
    }
    i32::try_from(index)
        .map_err(|_| ProbeError::InvalidConfig(format!("interface index {index} out of range")))
}

/// Attaches `prog` at the tcx ingress hook of `ifindex` (kernel 6.6+).
/// libbpf-rs 0.27 has no wrapper for tcx, so this calls libbpf directly.
fn attach_tcx_ingress(
    prog: &libbpf_rs::ProgramMut<'_>,
    ifindex: i32,
    interface: &str,
) -> Result<Link, ProbeError> {
    let step = format!("attaching the packet probe at tcx ingress of {interface}");
    // SAFETY: the program pointer is valid while the skeleton lives (the
    // caller keeps both); NULL options ask for the defaults.
    let link = unsafe {
        libbpf_sys::bpf_program__attach_tcx(
            prog.as_libbpf_object().as_ptr(),
            ifindex,
            std::ptr::null(),
        )
    };
    match std::ptr::NonNull::new(link) {
        // SAFETY: libbpf returned a valid link that we now own.
        Some(link) => Ok(unsafe { Link::from_ptr(link) }),
        None => {
            let e = std::io::Error::last_os_error();
            let detail = format!("{e} (tcx needs Linux 6.6 or newer)");
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Err(ProbeError::PermissionDenied { step, detail })
            } else {
                Err(ProbeError::Libbpf { step, detail })
            }
        }
    }
}

fn missing_rodata(probe: &str) -> ProbeError {
    ProbeError::Libbpf {
        step: format!("opening {probe}"),
        detail: "the object has no .rodata settings section".to_string(),
    }
}

fn exclude_tids(map: &MapMut<'_>, tids: &[u32]) -> Result<(), ProbeError> {
    for tid in tids {
        map.update(&tid.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(|e| ProbeError::libbpf("excluding a thread id", e))?;
    }
    Ok(())
}

fn sum_percpu(map: &MapMut<'_>) -> Result<u64, ProbeError> {
    let values = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| ProbeError::libbpf("reading the drop counter", e))?;
    Ok(values
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()))
        .map(u64::from_ne_bytes)
        .sum())
}

/// Collects decoded events into batches for the channel.
struct Batcher<'a> {
    out: Sender<Vec<ProbeEvent>>,
    batch: Vec<ProbeEvent>,
    batch_size: usize,
    stats: &'a SharedStats,
}

impl Batcher<'_> {
    fn push(&mut self, event: ProbeEvent) {
        self.batch.push(event);
        if self.batch.len() >= self.batch_size {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(self.batch_size));
        match self.out.try_send(batch) {
            Ok(()) => {}
            Err(TrySendError::Full(b)) | Err(TrySendError::Disconnected(b)) => {
                self.stats
                    .channel_drops
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn poll_loop(
    config: &ProbeConfig,
    probes: &Probes<'_>,
    out: Sender<Vec<ProbeEvent>>,
    stats: &SharedStats,
    stop: &AtomicBool,
    exclude: &Receiver<u32>,
    excluded: &mut Vec<u32>,
    on_ready: impl FnOnce(),
) -> Result<(), ProbeError> {
    let batcher = Rc::new(RefCell::new(Batcher {
        out,
        batch: Vec::with_capacity(config.batch_size),
        batch_size: config.batch_size,
        stats,
    }));
    let mut builder = RingBufferBuilder::new();
    if let Some(s) = &probes.syscall {
        let b = batcher.clone();
        builder
            .add(&s.maps.events, move |data: &[u8]| {
                if let Some(e) = SyscallEvent::read(data) {
                    let mut b = b.borrow_mut();
                    b.stats.syscall_events.fetch_add(1, Ordering::Relaxed);
                    b.push(ProbeEvent::Syscall(e));
                }
                0
            })
            .map_err(|e| ProbeError::libbpf("adding the syscall ring buffer", e))?;
    }
    if let Some(s) = &probes.page_cache {
        let b = batcher.clone();
        builder
            .add(&s.maps.events, move |data: &[u8]| {
                if let Some(e) = PageCacheEvent::read(data) {
                    let mut b = b.borrow_mut();
                    b.stats.page_cache_events.fetch_add(1, Ordering::Relaxed);
                    b.push(ProbeEvent::PageCache(e));
                }
                0
            })
            .map_err(|e| ProbeError::libbpf("adding the page-cache ring buffer", e))?;
    }
    if let Some(s) = &probes.packet {
        let b = batcher.clone();
        builder
            .add(&s.maps.events, move |data: &[u8]| {
                if let Some(e) = PacketEvent::read(data) {
                    let mut b = b.borrow_mut();
                    b.stats.packet_events.fetch_add(1, Ordering::Relaxed);
                    b.push(ProbeEvent::Packet(e));
                }
                0
            })
            .map_err(|e| ProbeError::libbpf("adding the packet ring buffer", e))?;
    }
    let ring = builder
        .build()
        .map_err(|e| ProbeError::libbpf("creating the ring buffer consumer", e))?;
    on_ready();

    let mut last_drop_read = Instant::now();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        // The kernel wakes us only past `wakeup_bytes`, so poll returning on
        // timeout is normal; consume picks up whatever is waiting.
        let rc = ring.poll_raw(config.poll_interval);
        if rc < 0 && rc != -libc::EINTR {
            return Err(ProbeError::Libbpf {
                step: "polling the ring buffers".to_string(),
                detail: std::io::Error::from_raw_os_error(-rc).to_string(),
            });
        }
        let rc = ring.consume_raw();
        if rc < 0 && rc != -libc::EINTR {
            return Err(ProbeError::Libbpf {
                step: "consuming the ring buffers".to_string(),
                detail: std::io::Error::from_raw_os_error(-rc).to_string(),
            });
        }
        batcher.borrow_mut().flush();

        let new: Vec<u32> = exclude.try_iter().collect();
        if !new.is_empty() {
            let room = MAX_EXCLUDED_TIDS.saturating_sub(excluded.len());
            let take = new.len().min(room);
            probes.exclude(&new[..take])?;
            excluded.extend_from_slice(&new[..take]);
        }
        if stopping || last_drop_read.elapsed() >= DROP_COUNTER_INTERVAL {
            probes.read_drops(stats)?;
            last_drop_read = Instant::now();
        }
        if stopping {
            return Ok(());
        }
    }
}
