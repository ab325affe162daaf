// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Packets: one event per TCP/UDP packet to or from one port, seen at the TC
 * ingress hook (tcx) of an interface. On loopback every packet passes ingress
 * exactly once, so both directions of a connection are captured once each. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load: keep only packets whose source or
 * destination port is this one (0 = every port). */
const volatile __u16 target_port = 0;
/* See syscall_latency.bpf.c: batch consumer wakeups. */
const volatile __u64 wakeup_bytes = 0;

#define ETH_HLEN_BYTES 14
#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86DD
#define PROTO_TCP 6
#define PROTO_UDP 17

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

/* Fills addresses and returns the offset of the L4 header and its protocol,
 * or -1 for anything that is not IPv4/IPv6 (fragments beyond the first and
 * IPv6 extension headers are not followed: they carry no ports here). */
static __always_inline int parse_l3(struct __sk_buff *skb, struct packet_event *e, __u8 *proto)
{
	if (skb->protocol == bpf_htons(ETH_P_IPV4)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, ETH_HLEN_BYTES, &ip, sizeof(ip)))
			return -1;
		if (ip.frag_off & bpf_htons(0x1fff))
			return -1;
		__builtin_memset(e->src_addr, 0, 10);
		__builtin_memset(e->dst_addr, 0, 10);
		e->src_addr[10] = 0xff;
		e->src_addr[11] = 0xff;
		e->dst_addr[10] = 0xff;
		e->dst_addr[11] = 0xff;
		__builtin_memcpy(&e->src_addr[12], &ip.saddr, 4);
		__builtin_memcpy(&e->dst_addr[12], &ip.daddr, 4);
		*proto = ip.protocol;
		return ETH_HLEN_BYTES + ip.ihl * 4;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, ETH_HLEN_BYTES, &ip6, sizeof(ip6)))
			return -1;
		__builtin_memcpy(e->src_addr, &ip6.saddr, 16);
		__builtin_memcpy(e->dst_addr, &ip6.daddr, 16);
		*proto = ip6.nexthdr;
		return ETH_HLEN_BYTES + sizeof(ip6);
	}
	return -1;
}

SEC("tcx/ingress")
int handle_ingress(struct __sk_buff *skb)
{
	struct packet_event pkt = {};
	struct packet_event *e;
	__u16 ports[2];
	__u32 zero = 0;
	__u8 proto = 0;
	int l4;

	l4 = parse_l3(skb, &pkt, &proto);
	if (l4 < 0 || (proto != PROTO_TCP && proto != PROTO_UDP))
		return TCX_NEXT;
	/* TCP and UDP both start with source port, destination port. */
	if (bpf_skb_load_bytes(skb, l4, ports, sizeof(ports)))
		return TCX_NEXT;
	pkt.src_port = bpf_ntohs(ports[0]);
	pkt.dst_port = bpf_ntohs(ports[1]);
	if (target_port && pkt.src_port != target_port && pkt.dst_port != target_port)
		return TCX_NEXT;
	pkt.length = skb->len;
	pkt.time_ns = bpf_ktime_get_ns();

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u64 *d = bpf_map_lookup_elem(&drops, &zero);
		if (d)
			*d += 1;
		return TCX_NEXT;
	}
	__builtin_memcpy(e, &pkt, sizeof(pkt));
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	/* Observe only: let the packet continue to the stack. */
	return TCX_NEXT;
}
