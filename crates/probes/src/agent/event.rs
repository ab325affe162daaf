//! Events of loom-agent's probes as the kernel writes them (layouts mirror
//! `src/bpf/agent_events.h`) and their telemetry records.

use crate::event::{PacketEvent, RawEvent};

/// Length of a process name (`TASK_COMM_LEN`).
pub const COMM_LEN: usize = 16;

/// One finished system call of a target.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentSyscall {
    /// Process id (tgid).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Syscall number (x86_64).
    pub nr: u32,
    _pad: u32,
    /// Entry, ns (CLOCK_MONOTONIC).
    pub start_ns: u64,
    /// Entry to exit, ns.
    pub duration_ns: u64,
    /// Process name, NUL padded.
    pub comm: [u8; COMM_LEN],
}

/// One folio a target put into the page cache.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentPageCache {
    /// Process id (tgid).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Insertion, ns (CLOCK_MONOTONIC).
    pub time_ns: u64,
    /// Page frame number.
    pub pfn: u64,
    /// Inode of the file.
    pub inode: u64,
    /// Page index in the file.
    pub index: u64,
    /// File system device (`major << 20 | minor`).
    pub device: u32,
    _pad: u32,
    /// Process name, NUL padded.
    pub comm: [u8; COMM_LEN],
}

/// One block request, issue to completion.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentBlockIo {
    /// Submitting process (0: not known).
    pub pid: u32,
    /// Submitting thread (0: not known).
    pub tid: u32,
    /// Device (`major << 20 | minor`).
    pub device: u32,
    /// Bytes completed.
    pub bytes: u32,
    /// 0 read, 1 write, 2 flush, 3 discard, 4 other.
    pub op: u32,
    _pad: u32,
    /// First sector.
    pub sector: u64,
    /// Issue, ns (CLOCK_MONOTONIC).
    pub start_ns: u64,
    /// Issue to completion, ns.
    pub latency_ns: u64,
    /// Submitter's process name (empty: not known).
    pub comm: [u8; COMM_LEN],
}

/// One run-queue wait of a target task.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentRunQueue {
    /// Process id (tgid).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU it then ran on.
    pub cpu: u32,
    _pad: u32,
    /// Wake-up or preemption, ns (CLOCK_MONOTONIC).
    pub start_ns: u64,
    /// Wait, ns.
    pub latency_ns: u64,
    /// Process name, NUL padded.
    pub comm: [u8; COMM_LEN],
}

impl RawEvent for AgentSyscall {}
impl RawEvent for AgentPageCache {}
impl RawEvent for AgentBlockIo {}
impl RawEvent for AgentRunQueue {}

/// An event of any of the agent's probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentEvent {
    /// Syscall probe.
    Syscall(AgentSyscall),
    /// Page-cache probe.
    PageCache(AgentPageCache),
    /// Block I/O probe.
    BlockIo(AgentBlockIo),
    /// Run-queue probe.
    RunQueue(AgentRunQueue),
    /// Packet probe (no process: packets have no task at ingress).
    Packet(PacketEvent),
}

impl AgentEvent {
    /// The process name (NUL padding cut; `[unknown]` when empty), or
    /// `None` for an event no process made (a packet).
    pub fn comm(&self) -> Option<&[u8]> {
        let c = match self {
            AgentEvent::Syscall(e) => &e.comm,
            AgentEvent::PageCache(e) => &e.comm,
            AgentEvent::BlockIo(e) => &e.comm,
            AgentEvent::RunQueue(e) => &e.comm,
            AgentEvent::Packet(_) => return None,
        };
        let end = c.iter().position(|&b| b == 0).unwrap_or(COMM_LEN);
        Some(if end == 0 { b"[unknown]" } else { &c[..end] })
    }

    /// Index of the probe that made it, in [`super::PROBE_NAMES`].
    pub fn probe(&self) -> usize {
        match self {
            AgentEvent::Syscall(_) => 0,
            AgentEvent::PageCache(_) => 1,
            AgentEvent::BlockIo(_) => 2,
            AgentEvent::RunQueue(_) => 3,
            AgentEvent::Packet(_) => super::PACKET_PROBE,
        }
    }

    /// The telemetry record, times mapped to wall-clock µs: `ns +
    /// offset_ns` where `offset_ns` = CLOCK_REALTIME − CLOCK_MONOTONIC.
    pub fn to_record(&self, offset_ns: u64) -> telemetry::Record {
        let us = |ns: u64| ns.saturating_add(offset_ns) / 1000;
        match self {
            AgentEvent::Syscall(s) => telemetry::Record::Syscall(telemetry::Syscall {
                pid: s.pid,
                tid: s.tid,
                nr: s.nr,
                start_us: us(s.start_ns),
                duration_us: s.duration_ns / 1000,
            }),
            AgentEvent::PageCache(p) => telemetry::Record::PageCache(telemetry::PageCache {
                pid: p.pid,
                tid: p.tid,
                timestamp_us: us(p.time_ns),
                pfn: p.pfn,
                inode: p.inode,
                index: p.index,
                device: p.device,
            }),
            AgentEvent::BlockIo(b) => telemetry::Record::BlockIo(telemetry::BlockIo {
                pid: b.pid,
                tid: b.tid,
                device: b.device,
                bytes: b.bytes,
                op: telemetry::BlockOp::from_code(b.op.min(4) as u8)
                    .unwrap_or(telemetry::BlockOp::Other),
                sector: b.sector,
                start_us: us(b.start_ns),
                latency_us: b.latency_ns / 1000,
            }),
            AgentEvent::RunQueue(r) => telemetry::Record::RunQueue(telemetry::RunQueue {
                pid: r.pid,
                tid: r.tid,
                cpu: r.cpu,
                start_us: us(r.start_ns),
                latency_us: r.latency_ns / 1000,
            }),
            AgentEvent::Packet(p) => telemetry::Record::Packet(telemetry::Packet {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn layouts_match_the_c_header() {
        assert_eq!(size_of::<AgentSyscall>(), 48);
        assert_eq!(size_of::<AgentPageCache>(), 64);
        assert_eq!(size_of::<AgentBlockIo>(), 64);
        assert_eq!(size_of::<AgentRunQueue>(), 48);
    }
}
