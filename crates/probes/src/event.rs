//! Events as the kernel writes them into the ring buffers (layouts mirror
//! `src/bpf/events.h`) and their safe decoding.

use std::mem::size_of;

/// One finished system call. Times are CLOCK_MONOTONIC nanoseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyscallEvent {
    /// Process id (tgid).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Syscall number (x86_64 numbering: 17 = `pread64`).
    pub nr: u32,
    _pad: u32,
    /// Entry time, ns (CLOCK_MONOTONIC).
    pub start_ns: u64,
    /// Time from entry to exit, ns.
    pub duration_ns: u64,
}

/// One folio inserted into the page cache. Times are CLOCK_MONOTONIC nanoseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageCacheEvent {
    /// Process id (tgid) that caused the insertion.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time of the insertion, ns (CLOCK_MONOTONIC).
    pub time_ns: u64,
    /// Page frame number of the first page.
    pub pfn: u64,
    /// Inode number of the file.
    pub inode: u64,
    /// Index of the first page within the file.
    pub index: u64,
    /// Kernel `dev_t` of the file system (`major << 20 | minor`), see [`PageCacheEvent::device_major_minor`].
    pub device: u32,
    /// Folio order: the insertion covers `1 << order` pages.
    pub order: u32,
}

impl PageCacheEvent {
    /// The device as (major, minor), comparable with `libc::major/minor` of `st_dev`.
    pub fn device_major_minor(&self) -> (u32, u32) {
        (self.device >> 20, self.device & 0xf_ffff)
    }
}

/// One TCP/UDP packet seen at TC ingress. Times are CLOCK_MONOTONIC nanoseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketEvent {
    /// Source address, IPv6 bytes (IPv4 as IPv4-mapped `::ffff:a.b.c.d`).
    pub src_addr: [u8; 16],
    /// Destination address, like `src_addr`.
    pub dst_addr: [u8; 16],
    /// Source port (host byte order).
    pub src_port: u16,
    /// Destination port (host byte order).
    pub dst_port: u16,
    /// Frame length in bytes (`skb->len`, link header included).
    pub length: u32,
    /// Capture time, ns (CLOCK_MONOTONIC).
    pub time_ns: u64,
}

/// An event from any probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeEvent {
    /// From the syscall-latency probe.
    Syscall(SyscallEvent),
    /// From the page-cache probe.
    PageCache(PageCacheEvent),
    /// From the packet probe.
    Packet(PacketEvent),
}

impl ProbeEvent {
    /// The telemetry record of this event, with times in µs since `epoch_ns`
    /// (a CLOCK_MONOTONIC time in ns; earlier events get 0) and the duration
    /// truncated to whole µs.
    pub fn to_record(&self, epoch_ns: u64) -> telemetry::Record {
        let us = |ns: u64| ns.saturating_sub(epoch_ns) / 1000;
        match self {
            ProbeEvent::Syscall(s) => telemetry::Record::Syscall(telemetry::Syscall {
                pid: s.pid,
                tid: s.tid,
                nr: s.nr,
                start_us: us(s.start_ns),
                duration_us: s.duration_ns / 1000,
            }),
            ProbeEvent::PageCache(p) => telemetry::Record::PageCache(telemetry::PageCache {
                pid: p.pid,
                tid: p.tid,
                timestamp_us: us(p.time_ns),
                pfn: p.pfn,
                inode: p.inode,
                index: p.index,
                device: p.device,
            }),
            ProbeEvent::Packet(p) => telemetry::Record::Packet(telemetry::Packet {
                src_addr: p.src_addr,
                dst_addr: p.dst_addr,
                src_port: p.src_port,
                dst_port: p.dst_port,
                length: p.length,
                timestamp_us: us(p.time_ns),
            }),
        }
    }
}

/// Plain-old-data event structs that can be read from ring-buffer bytes.
pub(crate) trait RawEvent: Copy {
    /// Reads one event from the start of `bytes`, or `None` if it is too short.
    fn read(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < size_of::<Self>() {
            return None;
        }
        // SAFETY: the length was checked, `Self` is a #[repr(C)] struct of
        // integers (every bit pattern is valid), and read_unaligned copes with
        // the ring buffer's 8-byte alignment being weaker than required.
        Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<Self>()) })
    }
}

impl RawEvent for SyscallEvent {}
impl RawEvent for PageCacheEvent {}
impl RawEvent for PacketEvent {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_c_header() {
        assert_eq!(size_of::<SyscallEvent>(), 32);
        assert_eq!(size_of::<PageCacheEvent>(), 48);
        assert_eq!(size_of::<PacketEvent>(), 48);
    }

    #[test]
    fn short_input_is_rejected() {
        assert!(SyscallEvent::read(&[0u8; 31]).is_none());
        let mut b = vec![0u8; 32];
        b[0] = 7;
        b[8] = 17;
        b[24] = 5;
        let e = SyscallEvent::read(&b).expect("long enough");
        assert_eq!((e.pid, e.nr, e.duration_ns), (7, 17, 5));
    }

    #[test]
    fn device_split() {
        let e = PageCacheEvent {
            device: (254 << 20) | 3,
            ..Default::default()
        };
        assert_eq!(e.device_major_minor(), (254, 3));
    }
}
