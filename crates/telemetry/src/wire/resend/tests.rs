//! The resending sender against a receiver played by the test over real
//! TCP: resends from the oldest frame kept, renumbering after an earlier run.

use super::*;
use crate::wire::{FrameReader, Welcome};
use std::net::{TcpListener, TcpStream};

/// The receiver's side of one connection, driven by the test: reads
/// the HELLO, answers WELCOME(`durable`), then reads frames.
struct Peer {
    r: FrameReader<TcpStream>,
    hello: Hello,
}

impl Peer {
    fn accept(l: &TcpListener, durable: u64) -> Peer {
        let (s, _) = l.accept().unwrap();
        let mut r = FrameReader::new(s);
        let hello = match r.read_frame_into(&mut Vec::new()).unwrap() {
            Some(crate::wire::Incoming::Control(h, p)) if h.frame_type == FrameType::Hello => {
                Hello::decode(&p).unwrap()
            }
            other => panic!("{other:?}"),
        };
        let w = Welcome {
            durable_seq: durable,
            flags: 1,
            receiver: "test".into(),
        };
        let mut f = Vec::new();
        encode_control(FrameType::Welcome, 0, 0, &w.encode(), &mut f).unwrap();
        r.get_mut().write_all(&f).unwrap();
        Peer { r, hello }
    }

    /// The next data frame's sequence number.
    fn data(&mut self) -> u64 {
        loop {
            match self.r.read_frame_into(&mut Vec::new()).unwrap() {
                Some(crate::wire::Incoming::Data(h)) => return h.seq,
                Some(_) => continue,
                None => panic!("closed"),
            }
        }
    }

    fn ack(&mut self, seq: u64) {
        let mut f = Vec::new();
        encode_control(FrameType::Ack, seq, 0, &[], &mut f).unwrap();
        self.r.get_mut().write_all(&f).unwrap();
    }
}

fn payload() -> Vec<u8> {
    let mut p = vec![crate::Kind::RunQueue as u8];
    crate::Record::RunQueue(crate::RunQueue {
        pid: 1,
        tid: 1,
        cpu: 0,
        start_us: 5,
        latency_us: 1,
    })
    .encode_into(&mut p);
    p
}

fn sender(addr: String, id: u64) -> (ResendingSender, Arc<ResendStats>) {
    let stats = Arc::new(ResendStats::default());
    let connect: Connector = Box::new(move || {
        let s = TcpStream::connect(&addr).map_err(|source| WireError::Io {
            context: "connecting",
            source,
        })?;
        Ok(Box::new(s) as Box<dyn Link>)
    });
    let hello = Hello {
        sender_id: id,
        flags: 0,
        next_seq: 1,
        token: String::new(),
        host: "h".into(),
        agent: "t".into(),
    };
    let cfg = ResendConfig {
        backoff_min: Duration::from_millis(10),
        ..ResendConfig::default()
    };
    (
        ResendingSender::new(connect, hello, cfg, stats.clone()),
        stats,
    )
}

#[test]
fn unacknowledged_frames_are_resent_and_an_earlier_run_is_skipped() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let peer = std::thread::spawn(move || {
        let mut p = Peer::accept(&l, 0);
        assert_eq!(p.hello.flags, HELLO_ACKS_WANTED | HELLO_WALL_CLOCK);
        assert_eq!((p.data(), p.data(), p.data()), (1, 2, 3));
        p.ack(2);
        std::thread::sleep(Duration::from_millis(100));
        drop(p);
        // The sender comes back from its oldest frame kept.
        let mut p = Peer::accept(&l, 2);
        assert_eq!(p.hello.next_seq, 3);
        assert_eq!((p.data(), p.data()), (3, 4));
        p.ack(4);
        std::thread::sleep(Duration::from_millis(200));
        // A new run of the same sender: this receiver holds up to 100.
        let mut p = Peer::accept(&l, 100);
        assert_eq!(p.data(), 101);
        p.ack(101);
        std::thread::sleep(Duration::from_millis(200));
    });
    let (mut s, stats) = sender(addr.clone(), 9);
    for _ in 0..3 {
        s.send(0, 1, &payload()).unwrap();
    }
    // Until the ACK of 2 and the close are seen.
    let t = Instant::now();
    while s.connected() || stats.acked_seq.load(Ordering::Relaxed) < 2 {
        s.pump(Duration::from_millis(10)).unwrap();
        assert!(t.elapsed() < Duration::from_secs(10));
    }
    s.send(0, 1, &payload()).unwrap();
    assert!(s.drain(Duration::from_secs(10)).unwrap());
    assert_eq!(stats.frames_resent.load(Ordering::Relaxed), 1);
    assert_eq!(stats.records_acked.load(Ordering::Relaxed), 4);
    s.close();
    let (mut again, stats) = sender(addr, 9);
    again.send(0, 1, &payload()).unwrap();
    assert!(again.finish(Duration::from_secs(10)).unwrap());
    assert_eq!(stats.acked_seq.load(Ordering::Relaxed), 101);
    peer.join().unwrap();
}
