//! The probe thread's end of the agent: events become records at
//! wall-clock time in the series book where they are read, and the book
//! goes to the sender once a round (or once it holds `FLUSH_BYTES`).
//!
//! Encoding on the probe thread rather than on a thread of its own saves a
//! channel hop and a wake-up per batch of events: at tens of thousands of
//! events a second the agent's CPU is mostly such fixed wake-ups.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use probes::agent::{AgentEvent, EventSink};

use crate::sender::Outbox;
use crate::series::SeriesBook;

/// The book goes to the sender once it holds this many bytes, even within
/// a round, so a burst is sent in pieces and memory stays bounded.
const FLUSH_BYTES: usize = 256 << 10;

/// The series book, shared by the probe thread (every event) and the
/// agent's main thread (its own `agent` records once per report interval,
/// the last flush at exit). Locked once per batch, and never contended but
/// at a report.
#[derive(Clone, Default)]
pub struct SharedBook(Arc<Mutex<SeriesBook>>);

impl SharedBook {
    /// The book (a panic elsewhere while holding it leaves it usable: its
    /// state is consistent between calls).
    pub fn lock(&self) -> MutexGuard<'_, SeriesBook> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The [`EventSink`] the agent gives its probes.
pub struct Encoder {
    book: SharedBook,
    outbox: Arc<Outbox>,
    /// Kernel monotonic to wall-clock nanoseconds.
    offset_ns: u64,
    flush_interval: Duration,
    last_flush: Instant,
    /// Wakes the main thread when the probe thread ends (the encoder is
    /// dropped with it), so a failing probe thread stops the agent at once.
    ended: Sender<()>,
}

impl Encoder {
    /// An encoder into `book`, handing it to `outbox` every
    /// `flush_interval`; `ended` gets a message when it is dropped.
    pub fn new(
        book: SharedBook,
        outbox: Arc<Outbox>,
        offset_ns: u64,
        flush_interval: Duration,
        ended: Sender<()>,
    ) -> Encoder {
        Encoder {
            book,
            outbox,
            offset_ns,
            flush_interval,
            last_flush: Instant::now(),
            ended,
        }
    }
}

impl EventSink for Encoder {
    fn take(&mut self, events: &[AgentEvent]) {
        let mut book = self.book.lock();
        for e in events {
            match e.comm() {
                Some(comm) => book.add(comm, &e.to_record(self.offset_ns)),
                None => book.add_untagged(&e.to_record(self.offset_ns)),
            }
        }
        if book.buffered_bytes() >= FLUSH_BYTES {
            self.outbox.send_book(&mut book);
        }
    }

    fn round(&mut self) {
        if self.last_flush.elapsed() >= self.flush_interval {
            self.outbox.send_book(&mut self.book.lock());
            self.last_flush = Instant::now();
        }
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        let _ = self.ended.try_send(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Item;

    fn packet(time_ns: u64) -> AgentEvent {
        AgentEvent::Packet(probes::PacketEvent {
            src_addr: [0; 16],
            dst_addr: [0; 16],
            src_port: 40000,
            dst_port: 6379,
            length: 60,
            time_ns,
        })
    }

    fn records(items: &[Item]) -> u32 {
        items
            .iter()
            .map(|i| match i {
                Item::Data { records, .. } => *records,
                Item::Series(_) => 0,
            })
            .sum()
    }

    /// Events wait in the book until a round ends past the flush interval,
    /// or until the book holds `FLUSH_BYTES` (then they go within the
    /// round); every event is handed over once; dropping the encoder (the
    /// probe thread ending) wakes the agent's main thread.
    #[test]
    fn the_book_goes_to_the_sender_once_a_round_or_when_full() {
        let (outbox, sent) = Outbox::for_test(1 << 30);
        let (ended_tx, ended) = crossbeam_channel::bounded(1);
        let book = SharedBook::default();
        let hour = Duration::from_secs(3600);
        let mut e = Encoder::new(book.clone(), Arc::new(outbox), 0, hour, ended_tx);

        e.take(&[packet(1_000), packet(2_000)]);
        e.round();
        assert!(sent.try_recv().is_err(), "handed over before the interval");
        assert!(book.lock().buffered_bytes() > 0);

        e.flush_interval = Duration::ZERO;
        e.round();
        let items = sent.try_recv().expect("handed over at the round");
        assert_eq!(records(&items), 2);
        assert_eq!(book.lock().buffered_bytes(), 0);
        e.round();
        assert!(sent.try_recv().is_err(), "an empty book sends nothing");

        e.flush_interval = hour;
        let burst: Vec<AgentEvent> = (0..20_000).map(|i| packet(10_000 + i)).collect();
        for batch in burst.chunks(1024) {
            e.take(batch);
        }
        let mut handed = 0;
        while let Ok(items) = sent.try_recv() {
            handed += records(&items);
        }
        assert!(handed > 0, "a burst past FLUSH_BYTES waits for the round");
        assert!(book.lock().buffered_bytes() < FLUSH_BYTES);
        e.flush_interval = Duration::ZERO;
        e.round();
        handed += sent.try_iter().map(|items| records(&items)).sum::<u32>();
        assert_eq!(handed, 20_000, "every event of the burst handed over once");

        assert!(ended.try_recv().is_err());
        drop(e);
        assert!(
            ended.try_recv().is_ok(),
            "the end of the probe thread wakes the agent"
        );
    }
}
