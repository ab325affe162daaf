//! The shared receiving side against real TCP connections: what arrives
//! equals what was sent, buffers circulate instead of being allocated, and
//! a bad, truncated or vanished connection ends only itself.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use endpoint::{BufferPool, Counters, Frames, Message, ReceiveConfig};
use telemetry::wire::FrameWriter;
use telemetry::{Batch, KvOp, KvOpKind, Record, Syscall};

enum Msg {
    Frames(Frames),
    Ended,
}

impl Message for Msg {
    fn frames(f: Frames) -> Self {
        Msg::Frames(f)
    }
    fn connection_ended(_: Instant) -> Self {
        Msg::Ended
    }
    fn into_frames(self) -> Option<Frames> {
        match self {
            Msg::Frames(f) => Some(f),
            Msg::Ended => None,
        }
    }
}

struct Endpoint {
    addr: String,
    rx: Receiver<Msg>,
    pool: BufferPool,
    counters: Arc<Counters>,
}

fn start(queue: usize, group_bytes: usize) -> Endpoint {
    start_bounded(queue, group_bytes, u64::MAX)
}

fn start_bounded(queue: usize, group_bytes: usize, max_queued_bytes: u64) -> Endpoint {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = crossbeam_channel::bounded(queue);
    let pool = BufferPool::new(256, group_bytes + 4096);
    let counters = Arc::new(Counters::default());
    let cfg = ReceiveConfig {
        group_bytes,
        max_queued_bytes,
        ..ReceiveConfig::new(1 << 20)
    };
    let (p, c) = (pool.clone(), counters.clone());
    std::thread::spawn(move || endpoint::listen::<Msg>(listener, tx, c, p, cfg));
    Endpoint {
        addr,
        rx,
        pool,
        counters,
    }
}

fn batch(i: u64, n: u64) -> Batch {
    let records = (0..n)
        .map(|k| {
            let t = i * 1_000 + k;
            if k % 3 == 0 {
                Record::Syscall(Syscall {
                    pid: 1,
                    tid: 2,
                    nr: (k % 5) as u32,
                    start_us: t,
                    duration_us: k,
                })
            } else {
                Record::KvOp(KvOp {
                    thread_id: 3,
                    op: if k % 2 == 0 {
                        KvOpKind::Read
                    } else {
                        KvOpKind::Write
                    },
                    start_us: t,
                    duration_us: k * 2,
                })
            }
        })
        .collect();
    Batch::new(i, records)
}

/// Consumes messages until `ends` connections ended: the records of every
/// group, decoded, each buffer given back to the pool; `consumed` gets the
/// running record count. Returns the records and the number of groups.
fn drain_counting(ep: &Endpoint, ends: usize, consumed: impl Fn(usize)) -> (Vec<Record>, u64) {
    let mut got = Vec::new();
    let mut scratch = Vec::new();
    let (mut ended, mut groups) = (0, 0);
    while ended < ends {
        match ep
            .rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a message")
        {
            Msg::Frames(f) => {
                f.decode_into(&mut scratch);
                assert_eq!(scratch.len() as u64, f.records);
                got.extend_from_slice(&scratch);
                ep.pool.give(f.into_payload());
                groups += 1;
                consumed(got.len());
            }
            Msg::Ended => ended += 1,
        }
    }
    (got, groups)
}

fn drain(ep: &Endpoint, ends: usize) -> Vec<Record> {
    drain_counting(ep, ends, |_| {}).0
}

#[test]
fn records_arrive_as_sent_and_buffers_are_recycled() {
    let ep = start(4096, 16 << 10);
    let sent: Vec<Batch> = (0..3_000).map(|i| batch(i, 1 + i % 200)).collect();
    let want: Vec<Record> = sent.iter().flat_map(|b| b.records.clone()).collect();
    // The sender waits for the consumer after every 100 frames, so at most
    // 100 frames are queued: nothing can drop, and a round's buffers are
    // back in the pool before the next round.
    let (progress_tx, progress) = crossbeam_channel::unbounded::<usize>();
    let addr = ep.addr.clone();
    let sender = std::thread::spawn(move || {
        let mut w = FrameWriter::new(TcpStream::connect(addr).unwrap());
        let mut records = 0;
        for round in sent.chunks(100) {
            for b in round {
                w.write_batch(b).unwrap();
                records += b.records.len();
            }
            while progress.recv().unwrap() < records {}
        }
    });
    let (got, groups) = drain_counting(&ep, 1, |n| {
        let _ = progress_tx.send(n);
    });
    sender.join().unwrap();
    let c = &ep.counters;
    assert!(
        got == want,
        "got {} records, sent {}, dropped {}",
        got.len(),
        want.len(),
        Counters::get(&c.records_dropped)
    );
    assert_eq!(Counters::get(&c.batches_received), 3_000);
    assert_eq!(Counters::get(&c.records_received), want.len() as u64);
    assert_eq!(Counters::get(&c.records_dropped), 0);
    assert_eq!(Counters::get(&c.queued_bytes), 0);
    // 30 rounds of at most 100 groups each: the buffers of the first round
    // serve all later ones.
    let allocated = ep.pool.allocated();
    assert!(groups >= 300, "{groups} groups");
    assert!(
        allocated <= 102,
        "{allocated} buffers allocated for {groups} groups"
    );
}

#[test]
fn a_full_queue_drops_whole_groups_and_counts_them() {
    let ep = start(1, 4 << 10);
    let sent: Vec<Batch> = (0..400).map(|i| batch(i, 100)).collect();
    let addr = ep.addr.clone();
    let sender = std::thread::spawn(move || {
        let mut w = FrameWriter::new(TcpStream::connect(addr).unwrap());
        for b in &sent {
            w.write_batch(b).unwrap();
        }
    });
    sender.join().unwrap();
    // Nobody consumes until the sender is done: all but the queued group drop.
    std::thread::sleep(Duration::from_millis(300));
    let got = drain(&ep, 1);
    let c = &ep.counters;
    let dropped = Counters::get(&c.records_dropped);
    assert!(dropped > 0);
    assert_eq!(got.len() as u64 + dropped, 40_000);
    assert_eq!(dropped % 100, 0, "whole frames are dropped");
}

#[test]
fn the_queue_is_bounded_in_bytes_and_consumed_groups_leave_it() {
    // Room for a few groups of 4 KiB, a queue of 10 000 messages.
    let ep = start_bounded(10_000, 4 << 10, 20 << 10);
    let sent: Vec<Batch> = (0..400).map(|i| batch(i, 100)).collect();
    let addr = ep.addr.clone();
    let sender = std::thread::spawn(move || {
        let mut w = FrameWriter::new(TcpStream::connect(addr).unwrap());
        for b in &sent {
            w.write_batch(b).unwrap();
        }
    });
    sender.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let c = &ep.counters;
    let queued = Counters::get(&c.queued_bytes);
    assert!(queued > 0 && queued <= 20 << 10, "{queued} bytes queued");
    let got = drain(&ep, 1);
    let dropped = Counters::get(&c.records_dropped);
    assert!(dropped > 0, "the byte bound dropped groups");
    assert_eq!(got.len() as u64 + dropped, 40_000);
    assert_eq!(
        Counters::get(&c.queued_bytes),
        0,
        "consumed groups leave the count"
    );
}

#[test]
fn bad_truncated_and_vanished_connections_end_only_themselves() {
    let ep = start(1024, 64 << 10);
    let good = |n: u64| {
        let mut v = Vec::new();
        telemetry::wire::encode_frame(&batch(n, 10), &mut v).unwrap();
        v
    };
    // 1: two good frames, then a frame with a flipped payload bit.
    let mut s1 = TcpStream::connect(&ep.addr).unwrap();
    let mut bad = good(3);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    s1.write_all(&[good(1), good(2), bad, good(4)].concat())
        .unwrap();
    // 2: a good frame, then half a frame, then the peer goes away.
    let mut s2 = TcpStream::connect(&ep.addr).unwrap();
    let g = good(5);
    s2.write_all(&[g.clone(), g[..g.len() / 2].to_vec()].concat())
        .unwrap();
    drop(s2);
    // 3: garbage from the first byte.
    let mut s3 = TcpStream::connect(&ep.addr).unwrap();
    s3.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let got = drain(&ep, 3);
    drop(s1);
    drop(s3);
    // The good frames before each failure arrived, nothing after it.
    let mut want: Vec<Record> = [1, 2, 5]
        .iter()
        .flat_map(|&n| batch(n, 10).records)
        .collect();
    let mut got = got;
    let key = |r: &Record| (r.timestamp_us(), r.source_id());
    want.sort_by_key(key);
    got.sort_by_key(key);
    assert!(
        got == want,
        "got {} records, want {}",
        got.len(),
        want.len()
    );
    assert_eq!(Counters::get(&ep.counters.bad_connections), 3);
    // The endpoint still serves a new connection.
    let mut s4 = FrameWriter::new(TcpStream::connect(&ep.addr).unwrap());
    s4.write_batch(&batch(6, 10)).unwrap();
    drop(s4);
    assert_eq!(drain(&ep, 1), batch(6, 10).records);
}
