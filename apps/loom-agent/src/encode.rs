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
