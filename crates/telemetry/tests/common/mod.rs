//! Proptest strategies shared by the telemetry tests.
#![allow(dead_code)]

use proptest::prelude::*;
use telemetry::{Batch, KvOp, KvOpKind, Packet, PageCache, Record, Syscall};

pub fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        (any::<u32>(), any::<bool>(), any::<u64>(), any::<u64>()).prop_map(|(t, w, s, d)| {
            Record::KvOp(KvOp {
                thread_id: t,
                op: if w { KvOpKind::Write } else { KvOpKind::Read },
                start_us: s,
                duration_us: d,
            })
        }),
        (
            any::<u32>(),
            any::<u32>(),
            0u32..512,
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(|(pid, tid, nr, s, d)| Record::Syscall(Syscall {
                pid,
                tid,
                nr,
                start_us: s,
                duration_us: d
            })),
        (any::<[u64; 4]>(), any::<[u32; 3]>()).prop_map(|(a, b)| {
            Record::PageCache(PageCache {
                pid: b[0],
                tid: b[1],
                timestamp_us: a[0],
                pfn: a[1],
                inode: a[2],
                index: a[3],
                device: b[2],
            })
        }),
        (
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u64>()
        )
            .prop_map(|(s, d, sp, dp, l, t)| Record::Packet(Packet {
                src_addr: s,
                dst_addr: d,
                src_port: sp,
                dst_port: dp,
                length: l,
                timestamp_us: t
            })),
    ]
}

pub fn batch() -> impl Strategy<Value = Batch> {
    (any::<u64>(), proptest::collection::vec(record(), 0..40)).prop_map(|(arrival_us, records)| {
        Batch {
            arrival_us,
            records,
        }
    })
}
