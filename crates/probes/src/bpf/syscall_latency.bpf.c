// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Syscall latency: remember the entry time per thread at sys_enter and emit
 * one event with the duration at sys_exit. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load: trace only this process (0 = every process). */
const volatile __u32 target_tgid = 0;
/* Wake the consumer only once this many bytes are waiting; it also polls on a
 * timer, so events are consumed in batches instead of one wakeup per event. */
const volatile __u64 wakeup_bytes = 0;

struct syscall_start {
	__u64 start_ns;
	__u32 nr;
	__u32 _pad;
};

/* In-flight syscalls by thread id. LRU so that threads that never return
 * (exit, killed) cannot fill the map. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct syscall_start);
} starts SEC(".maps");

/* Collector threads (ring buffer consumer, telemetry sender): tracing them
 * would make the collector observe itself. Filled by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_EXCLUDED_TIDS);
	__type(key, __u32);
	__type(value, __u8);
} excluded_tids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024); /* resized by the loader */
} events SEC(".maps");

/* Events lost because the ring buffer was full; summed over CPUs by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

SEC("tp/raw_syscalls/sys_enter")
int handle_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;
	struct syscall_start start = {};

	if (target_tgid && tgid != target_tgid)
		return 0;
	/* Checked only at entry: without a start entry the exit is ignored. */
	if (bpf_map_lookup_elem(&excluded_tids, &tid))
		return 0;

	start.start_ns = bpf_ktime_get_ns();
	start.nr = (__u32)ctx->id;
	bpf_map_update_elem(&starts, &tid, &start, BPF_ANY);
	return 0;
}

SEC("tp/raw_syscalls/sys_exit")
int handle_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;
	struct syscall_start *start;
	struct syscall_event *e;
	__u64 now, start_ns;
	__u32 nr;
	__u32 zero = 0;

	if (target_tgid && tgid != target_tgid)
		return 0;
	start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return 0;
	start_ns = start->start_ns;
	nr = start->nr;
	bpf_map_delete_elem(&starts, &tid);
	now = bpf_ktime_get_ns();

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u64 *d = bpf_map_lookup_elem(&drops, &zero);
		if (d)
			*d += 1;
		return 0;
	}
	e->pid = tgid;
	e->tid = tid;
	e->nr = nr;
	e->_pad = 0;
	e->start_ns = start_ns;
	e->duration_ns = now - start_ns;
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}
