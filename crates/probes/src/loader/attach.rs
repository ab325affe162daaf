//! Opening, loading and attaching each probe's BPF object, and the maps
//! the loader writes (excluded threads) and reads (drop counters).

use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, MapMut, OpenObject};

use super::SharedStats;
use crate::skel::packet::{PacketSkel, PacketSkelBuilder};
use crate::skel::page_cache::{PageCacheSkel, PageCacheSkelBuilder};
use crate::skel::syscall_latency::{SyscallLatencySkel, SyscallLatencySkelBuilder};
use crate::{ProbeConfig, ProbeError};

/// Storage of the opened BPF objects (the skeletons borrow it).
pub(super) struct Objects<'obj> {
    pub(super) syscall: &'obj mut MaybeUninit<OpenObject>,
    pub(super) page_cache: &'obj mut MaybeUninit<OpenObject>,
    pub(super) packet: &'obj mut MaybeUninit<OpenObject>,
}

/// The loaded and attached BPF objects.
pub(super) struct Probes<'obj> {
    pub(super) syscall: Option<SyscallLatencySkel<'obj>>,
    pub(super) page_cache: Option<PageCacheSkel<'obj>>,
    /// The tcx link: dropping it (also when the process dies) detaches the
    /// packet program; no qdisc is created, so nothing is left behind.
    packet_link: Option<Link>,
    pub(super) packet: Option<PacketSkel<'obj>>,
}

impl<'obj> Probes<'obj> {
    pub(super) fn attach(
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

    pub(super) fn exclude(&self, tids: &[u32]) -> Result<(), ProbeError> {
        if let Some(s) = &self.syscall {
            exclude_tids(&s.maps.excluded_tids, tids)?;
        }
        if let Some(s) = &self.page_cache {
            exclude_tids(&s.maps.excluded_tids, tids)?;
        }
        Ok(())
    }

    pub(super) fn read_drops(&self, stats: &SharedStats) -> Result<(), ProbeError> {
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
