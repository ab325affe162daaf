//! The workloads' acknowledged sink (`LOOM_STREAM_ACKED=1`) against the
//! real receiving side (`endpoint::listen` with an acknowledgement book):
//! HELLO asks for acknowledgements with wall-clock times, every record
//! arrives at its own time shifted onto the wall clock, and `finish`
//! returns once the receiver acknowledged everything (here the test plays
//! the app: it marks each group durable once it took it).

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use endpoint::{AckBook, BufferPool, Frames, Message, ReceiveConfig};
use telemetry::{Batch, KvOp, KvOpKind, Record, RecordingHeader};
use workload::{open_sink, Destination};

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

#[test]
fn acked_sink_records_arrive_at_wall_clock_times_and_finish_waits_for_acks() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let book = Arc::new(AckBook::in_memory());
    let cfg = ReceiveConfig {
        acks: Some(book.clone()),
        ..ReceiveConfig::new(1 << 20)
    };
    let (tx, rx) = crossbeam_channel::bounded::<Msg>(64);
    let counters = Arc::new(endpoint::Counters::default());
    std::thread::spawn(move || {
        endpoint::listen(listener, tx, counters, BufferPool::new(8, 1 << 16), cfg)
    });
    let app = std::thread::spawn(move || {
        let mut times = Vec::new();
        for m in rx.iter() {
            match m {
                Msg::Frames(f) => {
                    let sender = f.acked_sender.expect("an acknowledged sender");
                    for (kind, body) in f.records() {
                        times.push(telemetry::raw::event_time(kind, body));
                    }
                    book.advance(&[(sender, f.last_seq)]).expect("advance");
                }
                Msg::Ended => break,
            }
        }
        times
    });

    std::env::set_var("LOOM_STREAM_ACKED", "1");
    let header = RecordingHeader {
        workload: "test".into(),
        phase: "p0".into(),
        synthetic: true,
        description: String::new(),
    };
    let before = telemetry::wire::sender::now_us();
    let mut sink = open_sink(&Destination::Tcp(addr), &header).expect("open");
    let after = telemetry::wire::sender::now_us();
    let n = 5_000u64;
    for b in 0..50 {
        let records = (0..n / 50)
            .map(|i| {
                Record::KvOp(KvOp {
                    thread_id: 1,
                    op: KvOpKind::Read,
                    start_us: b * 1000 + i,
                    duration_us: 3,
                })
            })
            .collect();
        sink.write(&Batch::new(0, records)).expect("write");
    }
    sink.flush().expect("flush");
    sink.finish().expect("every frame acknowledged");
    let mut times = app.join().expect("app");
    times.sort_unstable();
    assert_eq!(times.len() as u64, n);
    for (k, t) in times.iter().enumerate() {
        let own = (k as u64 / 100) * 1000 + k as u64 % 100;
        assert!(
            (before + own..=after + own).contains(t),
            "record {k}: {t} is not its own time {own} + the wall clock at open"
        );
    }
}
