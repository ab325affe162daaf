/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Events shared by the eBPF programs and the Rust loader (crates/probes/src/event.rs
 * mirrors these layouts with #[repr(C)]; keep both in sync).
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns).
 */
#ifndef LOOM_PROBE_EVENTS_H
#define LOOM_PROBE_EVENTS_H

/* One finished system call: emitted at sys_exit with the duration computed in
 * the kernel, so user space gets one event per call instead of two. */
struct syscall_event {
	__u32 pid;
	__u32 tid;
	__u32 nr;
	__u32 _pad;
	__u64 start_ns;
	__u64 duration_ns;
};

/* One folio inserted into the page cache (filemap/mm_filemap_add_to_page_cache). */
struct page_cache_event {
	__u32 pid;
	__u32 tid;
	__u64 time_ns;
	__u64 pfn;
	__u64 inode;
	__u64 index;
	__u32 device; /* kernel dev_t: major << 20 | minor */
	__u32 order;  /* folio order: the insertion covers 1 << order pages */
};

/* One IPv4 or IPv6 TCP/UDP packet seen at TC ingress of an interface.
 * Addresses are IPv6 bytes, IPv4 as IPv4-mapped (::ffff:a.b.c.d), ports in
 * host byte order, length the whole frame (skb->len, link header included;
 * a GSO super-packet counts once with its full length). Layout = the 48-byte
 * telemetry packet record with time_ns in place of timestamp_us. */
struct packet_event {
	__u8 src_addr[16];
	__u8 dst_addr[16];
	__u16 src_port;
	__u16 dst_port;
	__u32 length;
	__u64 time_ns;
};

/* Size of the excluded-tid map (collector threads that must not be traced). */
#define MAX_EXCLUDED_TIDS 1024

#endif /* LOOM_PROBE_EVENTS_H */
