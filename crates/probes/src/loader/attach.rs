//! Opening, loading and attaching each probe's BPF object, and the maps
//! the loader writes (excluded threads) and reads (drop counters).

use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, MapMut, OpenObject};

use super::SharedStats;
use crate::packet::{sum_percpu, PacketProbe};
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
    pub(super) packet: Option<PacketProbe<'obj>>,
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
            probes.packet = Some(PacketProbe::attach(
                packet_obj,
                &config.packet_interface,
                port,
                config.ring_buffer_bytes,
                config.wakeup_bytes,
            )?);
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
                .store(s.kernel_drops()?, Ordering::Relaxed);
        }
        Ok(())
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
