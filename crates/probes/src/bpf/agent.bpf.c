// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* loom-agent's probes: syscall latency, page-cache insertions, block I/O
 * latency and run-queue latency, all filtered in the kernel on the target
 * (pids, process names, cgroup v2 subtrees, or everything but the agent).
 * The loader turns off (autoload) the programs it does not need, so one
 * object serves every combination and the filter maps are shared. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "agent_events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u32 filter_flags = 0;
/* fentry mode: the syscall number each used slot stands for. */
const volatile __u32 slot_nr[FENTRY_SLOTS] = {};
const volatile __u32 n_cgroups = 0;
const volatile __u64 wakeup_bytes = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} target_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, char[AGENT_COMM_LEN]);
	__type(value, __u8);
} target_comms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_TARGET_CGROUPS);
	__type(key, __u32);
	__type(value, struct target_cgroup);
} target_cgroups SEC(".maps");

/* The agent and the loom-app it feeds: never traced (--all included). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u8);
} excluded_tgids SEC(".maps");

/* raw_syscalls mode with a list: 1 for each listed syscall number. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALL_NR);
	__type(key, __u32);
	__type(value, __u8);
} syscall_list SEC(".maps");

struct syscall_start {
	__u64 start_ns; /* 0: no call of a target in flight */
	__u32 nr;
	__u32 verdict; /* VERDICT_*: whether the task is a target */
	/* What the verdict was taken on: the process name and (cgroup
	 * targets) the task's cgroup v2 id. A task that execs, renames its
	 * process or moves to another cgroup is judged again. */
	__u64 comm[AGENT_COMM_LEN / 8];
	__u64 cgroup_id;
};

#define VERDICT_UNKNOWN 0
#define VERDICT_TARGET 1
#define VERDICT_OTHER 2

/* In-flight call, one slot per task: it lives and dies with the task, so
 * (unlike an LRU hash of tids) nothing can evict a call in flight. With
 * name, cgroup or --all targets it also caches whether the task is a
 * target, so a target's later syscalls skip the name hash and the
 * exclusion lookups (pid-only targets keep their one 4-byte lookup). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct syscall_start);
} syscall_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} runqueue_starts SEC(".maps");

struct request_owner {
	__u32 pid;
	__u32 tid;
	__u64 issue_ns;
	char comm[AGENT_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct request_owner);
} requests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} syscall_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} pagecache_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} blockio_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} runqueue_events SEC(".maps");

/* Events lost on a full ring buffer, per probe (PROBE_*), summed over CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drop(__u32 probe)
{
	__u64 *d = bpf_map_lookup_elem(&drops, &probe);
	if (d)
		*d += 1;
}

static __always_inline long wake_flag(void *rb)
{
	return bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP :
									  BPF_RB_NO_WAKEUP;
}

/* The process name: the thread group leader's comm, so a thread that
 * renames itself still counts as its process. Read through the task's BTF
 * pointer: two plain loads instead of a helper call (the kernel keeps comm
 * NUL-padded: __set_task_comm pads). */
static __always_inline void leader_comm(struct task_struct *task, char *comm)
{
	__builtin_memcpy(comm, task->group_leader->comm, AGENT_COMM_LEN);
}

static __always_inline bool in_cgroups(struct task_struct *task)
{
	struct cgroup *cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	int level = BPF_CORE_READ(cg, level);

	for (__u32 i = 0; i < MAX_TARGET_CGROUPS; i++) {
		struct target_cgroup *t;
		struct cgroup *anc = NULL;
		__u32 k = i;

		if (i >= n_cgroups)
			break;
		t = bpf_map_lookup_elem(&target_cgroups, &k);
		if (!t || (int)t->level > level)
			continue;
		bpf_probe_read_kernel(&anc, sizeof(anc), &cg->ancestors[t->level & 0xff]);
		if (anc && BPF_CORE_READ(anc, kn, id) == t->id)
			return true;
	}
	return false;
}

/* Whether `task` (thread group `tgid`) is a target, exclusions aside. */
static __always_inline bool task_selected(struct task_struct *task, __u32 tgid)
{
	if (filter_flags & TARGET_ALL)
		return true;
	if ((filter_flags & TARGET_PID) && bpf_map_lookup_elem(&target_tgids, &tgid))
		return true;
	if (filter_flags & TARGET_COMM) {
		char comm[AGENT_COMM_LEN];

		leader_comm(task, comm);
		if (bpf_map_lookup_elem(&target_comms, comm))
			return true;
	}
	if ((filter_flags & TARGET_CGROUP) && in_cgroups(task))
		return true;
	return false;
}

/* Whether events of `task` are wanted: the exclusions (the agent, its
 * loom-app) are looked up only for a task selected, so a task that is no
 * target costs no lookup for them. */
static __always_inline bool task_matches(struct task_struct *task, __u32 tgid)
{
	return task_selected(task, tgid) && !bpf_map_lookup_elem(&excluded_tgids, &tgid);
}

static __always_inline bool current_matches(__u32 tgid)
{
	return task_matches(bpf_get_current_task_btf(), tgid);
}

/* What a task's verdict depends on besides its tgid: its process name and,
 * with cgroup targets, its cgroup v2 id. */
static __always_inline void verdict_key(struct task_struct *task, __u64 *comm, __u64 *cgid)
{
	leader_comm(task, (char *)comm);
	*cgid = 0;
	if (filter_flags & TARGET_CGROUP)
		*cgid = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/* The task's slot when it is a target (created if needed), else NULL. A
 * target whose slot cannot be had (no memory, or the storage busy in a
 * nested program) loses this call's event, counted. Only targets get a
 * slot: a task that is no target costs a storage lookup that finds
 * nothing, then the checks (a slot for every task on the host, tried,
 * cost non-targets more than the name lookup it saved them). */
static __always_inline struct syscall_start *target_slot(struct task_struct *task)
{
	struct syscall_start *start;
	__u64 comm[AGENT_COMM_LEN / 8], cgid;
	bool target;

	if (!(filter_flags & (TARGET_ALL | TARGET_COMM | TARGET_CGROUP))) {
		if (!task_matches(task, task->tgid))
			return NULL;
		start = bpf_task_storage_get(&syscall_starts, task, 0,
					     BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!start)
			count_drop(PROBE_SYSCALL);
		return start;
	}
	verdict_key(task, comm, &cgid);
	start = bpf_task_storage_get(&syscall_starts, task, 0, 0);
	if (start && start->verdict != VERDICT_UNKNOWN && start->comm[0] == comm[0] &&
	    start->comm[1] == comm[1] && start->cgroup_id == cgid)
		return start->verdict == VERDICT_TARGET ? start : NULL;
	target = task_matches(task, task->tgid);
	if (!start && !target)
		return NULL;
	if (!start)
		start = bpf_task_storage_get(&syscall_starts, task, 0,
					     BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!start) {
		count_drop(PROBE_SYSCALL);
		return NULL;
	}
	start->verdict = target ? VERDICT_TARGET : VERDICT_OTHER;
	start->comm[0] = comm[0];
	start->comm[1] = comm[1];
	start->cgroup_id = cgid;
	return target ? start : NULL;
}

static __always_inline void syscall_enter(__u32 nr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct syscall_start *start = target_slot(task);

	if (!start)
		return;
	start->nr = nr;
	start->start_ns = bpf_ktime_get_ns();
}

static __always_inline void syscall_exit(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct syscall_start *start = bpf_task_storage_get(&syscall_starts, task, 0, 0);
	struct agent_syscall_event *e;
	__u64 start_ns;

	if (!start || !start->start_ns)
		return;
	start_ns = start->start_ns;
	start->start_ns = 0;
	e = bpf_ringbuf_reserve(&syscall_events, sizeof(*e), 0);
	if (!e) {
		count_drop(PROBE_SYSCALL);
		return;
	}
	e->pid = task->tgid;
	e->tid = task->pid;
	e->nr = start->nr;
	e->_pad = 0;
	e->start_ns = start_ns;
	e->duration_ns = bpf_ktime_get_ns() - start_ns;
	leader_comm(task, e->comm);
	bpf_ringbuf_submit(e, wake_flag(&syscall_events));
}

/* Every syscall on the host passes here: the list check comes first. BTF
 * raw tracepoints (tp_btf): the program gets the id straight from the
 * tracepoint's arguments, without the perf buffer the `tp/raw_syscalls`
 * form fills with every call's arguments first. */
SEC("tp_btf/sys_enter")
int BPF_PROG(raw_sys_enter, struct pt_regs *regs, long id)
{
	__u32 nr = (__u32)id;

	if (filter_flags & SYSCALL_LIST) {
		__u8 *on = bpf_map_lookup_elem(&syscall_list, &nr);
		if (!on || !*on)
			return 0;
	}
	syscall_enter(nr);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(raw_sys_exit, struct pt_regs *regs, long ret)
{
	syscall_exit();
	return 0;
}

/* syscalls:sys_enter_NAME / sys_exit_NAME (attached by the loader to each
 * listed syscall): `int __syscall_nr` sits at offset 8 in both formats,
 * read from the context directly. */
SEC("tracepoint")
int one_sys_enter(void *ctx)
{
	syscall_enter((__u32) * (int *)((char *)ctx + 8));
	return 0;
}

SEC("tracepoint")
int one_sys_exit(void *ctx)
{
	syscall_exit();
	return 0;
}

/* fentry/fexit on the syscall functions themselves (__x64_sys_NAME): the
 * loader points each used slot at one listed syscall (set_attach_target)
 * and sets slot_nr; unused slots are not loaded. Unlike any syscall
 * tracepoint, this leaves every other syscall of the host on its fast
 * path: no work flag is set on any task. */
#define SYSCALL_SLOT(i)                                 \
	SEC("fentry")                                   \
	int sys_entry_##i(void *ctx)                    \
	{                                               \
		syscall_enter(slot_nr[i]);              \
		return 0;                               \
	}                                               \
	SEC("fexit")                                    \
	int sys_exit_##i(void *ctx)                     \
	{                                               \
		syscall_exit();                         \
		return 0;                               \
	}

SYSCALL_SLOT(0) SYSCALL_SLOT(1) SYSCALL_SLOT(2) SYSCALL_SLOT(3)
SYSCALL_SLOT(4) SYSCALL_SLOT(5) SYSCALL_SLOT(6) SYSCALL_SLOT(7)
SYSCALL_SLOT(8) SYSCALL_SLOT(9) SYSCALL_SLOT(10) SYSCALL_SLOT(11)
SYSCALL_SLOT(12) SYSCALL_SLOT(13) SYSCALL_SLOT(14) SYSCALL_SLOT(15)
SYSCALL_SLOT(16) SYSCALL_SLOT(17) SYSCALL_SLOT(18) SYSCALL_SLOT(19)
SYSCALL_SLOT(20) SYSCALL_SLOT(21) SYSCALL_SLOT(22) SYSCALL_SLOT(23)
SYSCALL_SLOT(24) SYSCALL_SLOT(25) SYSCALL_SLOT(26) SYSCALL_SLOT(27)
SYSCALL_SLOT(28) SYSCALL_SLOT(29) SYSCALL_SLOT(30) SYSCALL_SLOT(31)

SEC("tp/filemap/mm_filemap_add_to_page_cache")
int pagecache_add(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct agent_pagecache_event *e;

	if (!current_matches(pid_tgid >> 32))
		return 0;
	e = bpf_ringbuf_reserve(&pagecache_events, sizeof(*e), 0);
	if (!e) {
		count_drop(PROBE_PAGECACHE);
		return 0;
	}
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->time_ns = bpf_ktime_get_ns();
	e->pfn = ctx->pfn;
	e->inode = ctx->i_ino;
	e->index = ctx->index;
	e->device = ctx->s_dev;
	e->_pad = 0;
	leader_comm(bpf_get_current_task_btf(), e->comm);
	bpf_ringbuf_submit(e, wake_flag(&pagecache_events));
	return 0;
}

/* A request starts its accounting in the submitter's context (bio to
 * request): remember who submitted it, when that task is a target. */
SEC("tp_btf/block_io_start")
int BPF_PROG(blockio_start, struct request *rq)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 key = (__u64)rq;
	struct request_owner o = {};

	if (!current_matches(pid_tgid >> 32))
		return 0;
	o.pid = pid_tgid >> 32;
	o.tid = (__u32)pid_tgid;
	leader_comm(bpf_get_current_task_btf(), o.comm);
	bpf_map_update_elem(&requests, &key, &o, BPF_ANY);
	return 0;
}

/* Issue to the driver: the latency starts here. Requests whose submitter
 * is unknown (flushes the block layer makes itself, requests started before
 * the agent) are kept only with --all, as pid 0. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(blockio_issue, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct request_owner *o = bpf_map_lookup_elem(&requests, &key);

	if (!o) {
		struct request_owner unknown = {};

		if (!(filter_flags & TARGET_ALL))
			return 0;
		unknown.issue_ns = bpf_ktime_get_ns();
		bpf_map_update_elem(&requests, &key, &unknown, BPF_ANY);
		return 0;
	}
	o->issue_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(blockio_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct request_owner *o = bpf_map_lookup_elem(&requests, &key);
	struct agent_blockio_event *e;
	struct gendisk *disk;
	__u32 op;

	if (!o || !o->issue_ns)
		return 0;
	e = bpf_ringbuf_reserve(&blockio_events, sizeof(*e), 0);
	if (!e) {
		count_drop(PROBE_BLOCKIO);
		bpf_map_delete_elem(&requests, &key);
		return 0;
	}
	e->pid = o->pid;
	e->tid = o->tid;
	__builtin_memcpy(e->comm, o->comm, AGENT_COMM_LEN);
	e->start_ns = o->issue_ns;
	e->latency_ns = bpf_ktime_get_ns() - o->issue_ns;
	bpf_map_delete_elem(&requests, &key);
	disk = BPF_CORE_READ(rq, q, disk);
	e->device = (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
	e->bytes = nr_bytes;
	op = BPF_CORE_READ(rq, cmd_flags) & 0xff;
	/* REQ_OP_READ 0, WRITE 1, FLUSH 2, DISCARD 3, SECURE_ERASE 5, ZONE_APPEND 7,
	 * WRITE_ZEROES 9. */
	e->op = op == 0 ? 0 : op == 1 || op == 7 ? 1 : op == 2 ? 2 : op == 3 || op == 5 || op == 9 ? 3 : 4;
	e->_pad = 0;
	e->sector = BPF_CORE_READ(rq, __sector);
	bpf_ringbuf_submit(e, wake_flag(&blockio_events));
	return 0;
}

static __always_inline void runqueue_enqueued(struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	__u64 now;

	if (!task_matches(p, BPF_CORE_READ(p, tgid)))
		return;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&runqueue_starts, &tid, &now, BPF_ANY);
}

/* Filtered on the task being woken, not on the one running. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(runqueue_wakeup, struct task_struct *p)
{
	runqueue_enqueued(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(runqueue_wakeup_new, struct task_struct *p)
{
	runqueue_enqueued(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(runqueue_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct agent_runqueue_event *e;
	__u32 tid;
	__u64 *start, start_ns;

	/* A preempted task goes straight back to the run queue. */
	if (prev_state == 0)
		runqueue_enqueued(prev);
	tid = BPF_CORE_READ(next, pid);
	start = bpf_map_lookup_elem(&runqueue_starts, &tid);
	if (!start)
		return 0;
	start_ns = *start;
	bpf_map_delete_elem(&runqueue_starts, &tid);
	e = bpf_ringbuf_reserve(&runqueue_events, sizeof(*e), 0);
	if (!e) {
		count_drop(PROBE_RUNQUEUE);
		return 0;
	}
	e->pid = BPF_CORE_READ(next, tgid);
	e->tid = tid;
	e->cpu = bpf_get_smp_processor_id();
	e->_pad = 0;
	e->start_ns = start_ns;
	e->latency_ns = bpf_ktime_get_ns() - start_ns;
	leader_comm(next, e->comm);
	bpf_ringbuf_submit(e, wake_flag(&runqueue_events));
	return 0;
}

/* --follow-children: a process forked by a target becomes a target. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (ptgid == ctgid || !bpf_map_lookup_elem(&target_tgids, &ptgid))
		return 0;
	bpf_map_update_elem(&target_tgids, &ctgid, &one, BPF_ANY);
	return 0;
}
