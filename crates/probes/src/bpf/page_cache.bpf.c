// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Page cache: one event per folio inserted into the page cache. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load: trace only this process (0 = every process). */
const volatile __u32 target_tgid = 0;
/* See syscall_latency.bpf.c: batch consumer wakeups. */
const volatile __u64 wakeup_bytes = 0;

/* Collector threads excluded from tracing; filled by the loader. */
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

SEC("tp/filemap/mm_filemap_add_to_page_cache")
int handle_add_to_page_cache(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;
	struct page_cache_event *e;
	__u32 zero = 0;

	if (target_tgid && tgid != target_tgid)
		return 0;
	if (bpf_map_lookup_elem(&excluded_tids, &tid))
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u64 *d = bpf_map_lookup_elem(&drops, &zero);
		if (d)
			*d += 1;
		return 0;
	}
	e->pid = tgid;
	e->tid = tid;
	e->time_ns = bpf_ktime_get_ns();
	e->pfn = ctx->pfn;
	e->inode = ctx->i_ino;
	e->index = ctx->index;
	e->device = ctx->s_dev;
	/* "order" appeared with large folios (6.x); older kernels insert single pages. */
	e->order = bpf_core_field_exists(ctx->order) ? ctx->order : 0;
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}
