/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Events and settings of loom-agent's probes (agent.bpf.c), shared with the
 * Rust loader (probes/src/agent/event.rs mirrors the layouts; keep both in
 * sync). Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns); `comm`
 * is the process name (the thread group leader's comm, as /proc/PID/comm).
 */
#ifndef LOOM_AGENT_EVENTS_H
#define LOOM_AGENT_EVENTS_H

#define AGENT_COMM_LEN 16

/* Target selection (filter_flags). */
#define TARGET_ALL 1u	   /* every task except excluded_tgids */
#define TARGET_PID 2u	   /* tgid in target_tgids */
#define TARGET_COMM 4u	   /* process name in target_comms */
#define TARGET_CGROUP 8u   /* in the subtree of a target_cgroups entry */
#define FOLLOW_CHILDREN 16u /* new processes of a target tgid join target_tgids */
#define SYSCALL_LIST 32u   /* raw_syscalls mode: only numbers set in syscall_list */

#define MAX_TARGET_CGROUPS 8
#define MAX_SYSCALL_NR 1024
#define FENTRY_SLOTS 32 /* syscalls the fentry mode attaches at most */

/* Indexes of the per-probe drop counters. */
#define PROBE_SYSCALL 0
#define PROBE_PAGECACHE 1
#define PROBE_BLOCKIO 2
#define PROBE_RUNQUEUE 3
#define PROBE_COUNT 4

struct target_cgroup {
	__u64 id;    /* cgroup v2 id (the directory's inode number) */
	__u32 level; /* depth below the root (root = 0) */
	__u32 _pad;
};

struct agent_syscall_event {
	__u32 pid;
	__u32 tid;
	__u32 nr;
	__u32 _pad;
	__u64 start_ns;
	__u64 duration_ns;
	char comm[AGENT_COMM_LEN];
};

struct agent_pagecache_event {
	__u32 pid;
	__u32 tid;
	__u64 time_ns;
	__u64 pfn;
	__u64 inode;
	__u64 index;
	__u32 device;
	__u32 _pad;
	char comm[AGENT_COMM_LEN];
};

/* One block request from issue to completion; pid 0 when the submitter is
 * not known (no block_io_start seen in a task's context). */
struct agent_blockio_event {
	__u32 pid;
	__u32 tid;
	__u32 device; /* major << 20 | minor */
	__u32 bytes;
	__u32 op;     /* 0 read, 1 write, 2 flush, 3 discard, 4 other */
	__u32 _pad;
	__u64 sector;
	__u64 start_ns;
	__u64 latency_ns;
	char comm[AGENT_COMM_LEN];
};

struct agent_runqueue_event {
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u32 _pad;
	__u64 start_ns;
	__u64 latency_ns;
	char comm[AGENT_COMM_LEN];
};

#endif /* LOOM_AGENT_EVENTS_H */
