//! The packet probe (`src/bpf/packet.bpf.c`) loaded and attached at an
//! interface's TC ingress hook: shared by the workloads' loader and
//! loom-agent's. Packets have no task in the kernel's ingress path, so
//! they are selected there by interface and port, not by process.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, MapMut, OpenObject};

use crate::skel::packet::{PacketSkel, PacketSkelBuilder};
use crate::ProbeError;

/// The loaded packet program and its tcx link.
pub(crate) struct PacketProbe<'obj> {
    /// Dropping it (also when the process dies) detaches the program; no
    /// qdisc is created, so nothing is left behind. Declared first so it is
    /// dropped before the program.
    _link: Link,
    /// The skeleton: its `events` ring buffer and `drops` counter.
    pub(crate) skel: PacketSkel<'obj>,
}

impl<'obj> PacketProbe<'obj> {
    /// Loads the program into `storage` keeping packets to or from `port`
    /// (0: every port) and attaches it at `interface`'s ingress.
    pub(crate) fn attach(
        storage: &'obj mut MaybeUninit<OpenObject>,
        interface: &str,
        port: u16,
        ring_buffer_bytes: u32,
        wakeup_bytes: u64,
    ) -> Result<PacketProbe<'obj>, ProbeError> {
        let err = |step: &'static str| move |e| ProbeError::libbpf(step, e);
        let ifindex = interface_index(interface)?;
        let mut open = PacketSkelBuilder::default()
            .open(storage)
            .map_err(err("opening packet"))?;
        let rodata = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| ProbeError::Libbpf {
                step: "opening packet".into(),
                detail: "the object has no .rodata settings section".into(),
            })?;
        rodata.target_port = port;
        rodata.wakeup_bytes = wakeup_bytes;
        open.maps
            .events
            .set_max_entries(ring_buffer_bytes)
            .map_err(err("sizing the packet ring buffer"))?;
        let skel = open.load().map_err(err("loading packet"))?;
        let link = attach_tcx_ingress(&skel.progs.handle_ingress, ifindex, interface)?;
        Ok(PacketProbe { _link: link, skel })
    }

    /// Packets lost on a full ring buffer so far.
    pub(crate) fn kernel_drops(&self) -> Result<u64, ProbeError> {
        sum_percpu(&self.skel.maps.drops)
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

/// The sum over CPUs of a one-entry per-CPU counter.
pub(crate) fn sum_percpu(map: &MapMut<'_>) -> Result<u64, ProbeError> {
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
