//! A version-2 sender that keeps every data frame until the receiver
//! acknowledges it (ACK frames, WELCOME's `durable_seq`), reconnects with
//! backoff when the connection breaks, and then sends again what is not
//! acknowledged. `tcp-replay --acked` and `loom-agent` use it.
//!
//! The frames kept are bounded by bytes ([`ResendConfig::max_unacked_bytes`]);
//! when the bound is reached the sender either waits for acknowledgements
//! (lossless: a replay slows down) or drops the new frame and counts it
//! (a probe agent cannot make the kernel wait).
//!
//! Frames are gathered and written once the caller flushes or they hold
//! [`OUT_BYTES`], not one `write` per frame: an agent sends a small frame
//! per process at each flush, and 170 loopback writes a second were a
//! sixth of its CPU. Acknowledgements are read after each write.
//!
//! Sequence numbers continue across reconnects. A receiver that answers
//! with a durable mark beyond anything this sender sent (the sender
//! restarted under the same stable id) is past an earlier run's frames:
//! the frames kept are renumbered after it, so none looks like a resend.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::control::{HELLO_ACKS_WANTED, HELLO_WALL_CLOCK};
use super::sender::{handshake, now_us};
use super::FRAME_HEADER_LEN_V2;
use super::{encode_control, encode_data_v2, FrameType, Hello, SeriesTags};
use crate::WireError;

mod acks;
mod link;

pub use link::{Connector, Link};

/// What the sender does with a new frame while the frames kept fill
/// [`ResendConfig::max_unacked_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Wait for acknowledgements (reconnecting as needed): nothing is lost.
    Wait,
    /// Drop the new frame and count it.
    DropNew,
}

/// Sender settings.
#[derive(Debug, Clone)]
pub struct ResendConfig {
    /// Bytes of frames kept until acknowledged.
    pub max_unacked_bytes: u64,
    /// See [`WhenFull`].
    pub when_full: WhenFull,
    /// First wait before reconnecting; doubles up to `backoff_max`.
    pub backoff_min: Duration,
    /// Longest wait between two connection attempts.
    pub backoff_max: Duration,
    /// Longest a write or the handshake may block before the connection
    /// counts as broken (then reconnected, frames sent again).
    pub io_timeout: Duration,
}

impl Default for ResendConfig {
    fn default() -> Self {
        ResendConfig {
            max_unacked_bytes: 256 << 20,
            when_full: WhenFull::Wait,
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            io_timeout: Duration::from_secs(30),
        }
    }
}

/// What the sender counts (shared, so a progress line can read it).
#[derive(Debug, Default)]
pub struct ResendStats {
    /// Data frames sent the first time.
    pub frames_sent: AtomicU64,
    /// Records in them.
    pub records_sent: AtomicU64,
    /// Frames sent again after a reconnect.
    pub frames_resent: AtomicU64,
    /// Records acknowledged as durable.
    pub records_acked: AtomicU64,
    /// Frames dropped because the frames kept filled the bound.
    pub frames_dropped: AtomicU64,
    /// Records in them.
    pub records_dropped: AtomicU64,
    /// Connections made (the first one included).
    pub connections: AtomicU64,
    /// The highest sequence number acknowledged.
    pub acked_seq: AtomicU64,
    /// Bytes of frames kept now.
    pub unacked_bytes: AtomicU64,
}

/// A frame kept until acknowledged.
struct Kept {
    seq: u64,
    records: u32,
    frame: Vec<u8>,
    /// When it was first written (acknowledgement latency).
    sent: Option<Instant>,
}

/// Keeps, sends and resends the frames of one sender (see the module docs).
pub struct ResendingSender {
    connect: Connector,
    hello: Hello,
    cfg: ResendConfig,
    stats: Arc<ResendStats>,
    series: Vec<SeriesTags>,
    kept: VecDeque<Kept>,
    kept_bytes: u64,
    next_seq: u64,
    /// Highest sequence number written on some connection of this run.
    sent_max: u64,
    link: Option<Box<dyn Link>>,
    /// Frames not written yet (none without a connection); the highest seq.
    out: Vec<u8>,
    out_max: u64,
    inbox: Vec<u8>,
    backoff: Duration,
    next_attempt: Instant,
    /// Acknowledgement latencies, µs (the first million).
    latencies_us: Vec<u64>,
    last_error: Option<String>,
    /// The receiver acknowledges (its WELCOME said so; assumed until the
    /// first WELCOME).
    receiver_acks: bool,
}

const LATENCY_SAMPLES: usize = 1 << 20;
/// Frames gathered before they are written without waiting for a flush.
pub const OUT_BYTES: usize = 64 << 10;

impl ResendingSender {
    /// A sender that connects with `connect` and introduces itself with
    /// `hello` (its `sender_id`, token, host and agent; the flags "acks
    /// wanted" and "wall-clock times" are set, `next_seq` is filled in).
    pub fn new(
        connect: Connector,
        hello: Hello,
        cfg: ResendConfig,
        stats: Arc<ResendStats>,
    ) -> Self {
        ResendingSender {
            connect,
            hello,
            backoff: cfg.backoff_min,
            cfg,
            stats,
            series: Vec::new(),
            kept: VecDeque::new(),
            kept_bytes: 0,
            next_seq: 1,
            sent_max: 0,
            link: None,
            out: Vec::new(),
            out_max: 0,
            inbox: Vec::new(),
            next_attempt: Instant::now(),
            latencies_us: Vec::new(),
            last_error: None,
            receiver_acks: true,
        }
    }

    /// Declares a series reference (sent now and after every reconnect).
    pub fn declare(&mut self, s: SeriesTags) {
        if self.link.is_some() {
            if let Err(e) = self.write_series(&s) {
                self.broken(&e);
            }
        }
        self.series.push(s);
    }

    /// Sends one data frame of `records` records (`payload` in wire form,
    /// times wall-clock µs) naming `series_ref`. Returns an error only when
    /// the receiver refuses this sender (wrong token): retrying cannot help.
    pub fn send(&mut self, series_ref: u32, records: u32, payload: &[u8]) -> Result<(), WireError> {
        let len = (payload.len() + FRAME_HEADER_LEN_V2) as u64;
        while self.kept_bytes + len > self.cfg.max_unacked_bytes && !self.kept.is_empty() {
            match self.cfg.when_full {
                WhenFull::DropNew => {
                    self.stats.frames_dropped.fetch_add(1, Ordering::Relaxed);
                    self.stats
                        .records_dropped
                        .fetch_add(u64::from(records), Ordering::Relaxed);
                    return self.pump(Duration::ZERO);
                }
                WhenFull::Wait => self.pump(Duration::from_millis(20))?,
            }
        }
        let mut frame = Vec::with_capacity(len as usize);
        encode_data_v2(
            self.next_seq,
            series_ref,
            records,
            now_us(),
            payload,
            &mut frame,
        )?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.kept_bytes += len;
        self.stats
            .unacked_bytes
            .store(self.kept_bytes, Ordering::Relaxed);
        self.stats.frames_sent.fetch_add(1, Ordering::Relaxed);
        self.stats
            .records_sent
            .fetch_add(u64::from(records), Ordering::Relaxed);
        let mut kept = Kept {
            seq,
            records,
            frame,
            sent: None,
        };
        let linked = self.link.is_some();
        if linked {
            self.out.extend_from_slice(&kept.frame);
            self.out_max = seq;
            kept.sent = Some(Instant::now());
        }
        self.kept.push_back(kept);
        if !linked {
            // Reconnects once the backoff has passed.
            return self.pump(Duration::ZERO);
        }
        if self.out.len() >= OUT_BYTES {
            self.write_out();
            return self.pump(Duration::ZERO);
        }
        Ok(())
    }

    /// Writes the frames gathered; a failed write breaks the connection
    /// (the frames stay kept and are sent again after reconnecting).
    fn write_out(&mut self) {
        if self.out.is_empty() {
            return;
        }
        let Some(link) = self.link.as_mut() else {
            self.out.clear();
            return;
        };
        let r = link.write_all(&self.out);
        self.out.clear();
        match r {
            Ok(()) => {
                self.sent_max = self.sent_max.max(self.out_max);
                if !self.receiver_acks {
                    // Nothing will acknowledge them: written is all they get.
                    self.acked(self.sent_max);
                }
            }
            Err(e) => self.broken(&e),
        }
    }

    /// Reads acknowledgements (waiting up to `wait` for one) and
    /// reconnects when the connection is down and the backoff has passed.
    pub fn pump(&mut self, wait: Duration) -> Result<(), WireError> {
        if !wait.is_zero() {
            // Acknowledgements waited for can only come for frames written.
            self.write_out();
        }
        if self.link.is_none() {
            let now = Instant::now();
            if now < self.next_attempt {
                std::thread::sleep(wait.min(self.next_attempt - now));
                return Ok(());
            }
            match self.connect_and_resend() {
                Ok(()) => self.backoff = self.cfg.backoff_min,
                Err(e @ WireError::Refused(_)) => {
                    self.link = None;
                    self.next_attempt = Instant::now() + self.backoff;
                    self.backoff = (self.backoff * 2).min(self.cfg.backoff_max);
                    return Err(e);
                }
                Err(e) => {
                    let msg = e.to_string();
                    if self.last_error.as_deref() != Some(msg.as_str()) {
                        log::warn!("cannot reach the receiver: {msg}; retrying with backoff");
                        self.last_error = Some(msg);
                    }
                    self.link = None;
                    self.next_attempt = Instant::now() + self.backoff;
                    self.backoff = (self.backoff * 2).min(self.cfg.backoff_max);
                    return Ok(());
                }
            }
        }
        match self.read_acks(wait) {
            Ok(()) => Ok(()),
            Err(e @ WireError::Refused(_)) => Err(e),
            Err(e) => {
                self.broken(&e);
                Ok(())
            }
        }
    }

    /// Waits until every frame sent is acknowledged, at most `timeout`
    /// (reconnecting as needed); true when they all are.
    pub fn drain(&mut self, timeout: Duration) -> Result<bool, WireError> {
        let deadline = Instant::now() + timeout;
        while !self.kept.is_empty() {
            self.flush();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.pump(left.min(Duration::from_millis(50)))?;
        }
        Ok(self.kept.is_empty())
    }

    /// [`Self::drain`], then closes the connection.
    pub fn finish(&mut self, timeout: Duration) -> Result<bool, WireError> {
        let all = self.drain(timeout);
        self.close();
        all
    }

    /// Closes the connection (frames kept stay kept).
    pub fn close(&mut self) {
        self.write_out();
        if let Some(mut l) = self.link.take() {
            let _ = l.flush();
            let _ = l.tcp().shutdown(std::net::Shutdown::Both);
        }
    }

    /// The payloads of the frames not acknowledged (records in wire form).
    pub fn unacked_payloads(&self) -> impl Iterator<Item = &[u8]> {
        self.kept.iter().map(|k| &k.frame[FRAME_HEADER_LEN_V2..])
    }

    /// Writes the frames gathered and flushes buffered bytes of the
    /// connection (TLS), if any.
    pub fn flush(&mut self) {
        self.write_out();
        if let Some(l) = self.link.as_mut() {
            if let Err(e) = l.flush() {
                self.broken(&e);
            }
        }
    }

    /// Frames kept, not acknowledged yet.
    pub fn unacked_frames(&self) -> usize {
        self.kept.len()
    }

    /// Whether a connection is up.
    pub fn connected(&self) -> bool {
        self.link.is_some()
    }

    /// Acknowledgement latencies seen so far, µs, sorted.
    pub fn latencies_us(&self) -> Vec<u64> {
        let mut v = self.latencies_us.clone();
        v.sort_unstable();
        v
    }

    fn broken(&mut self, e: &dyn std::fmt::Display) {
        if let Some(l) = self.link.take() {
            log::warn!("connection to the receiver lost: {e}; reconnecting");
            let _ = l.tcp().shutdown(std::net::Shutdown::Both);
            self.next_attempt = Instant::now() + self.backoff;
        }
        self.inbox.clear();
        self.out.clear();
        // Frames gathered but never written are first sends, not resends.
        for k in self
            .kept
            .iter_mut()
            .rev()
            .take_while(|k| k.seq > self.sent_max)
        {
            k.sent = None;
        }
    }

    fn write_series(&mut self, s: &SeriesTags) -> Result<(), WireError> {
        // Data frames gathered before it go first (they may name it only
        // after it is declared, so the order must stay).
        self.write_out();
        let mut f = Vec::new();
        encode_control(FrameType::Series, 0, now_us(), &s.encode(), &mut f)?;
        if let Some(l) = self.link.as_mut() {
            l.write_all(&f).map_err(|source| WireError::Io {
                context: "sending a SERIES frame",
                source,
            })?;
        }
        Ok(())
    }

    fn connect_and_resend(&mut self) -> Result<(), WireError> {
        let io = |context| move |source| WireError::Io { context, source };
        let mut link = (self.connect)()?;
        let tcp = link.tcp();
        tcp.set_nodelay(true).map_err(io("setting TCP_NODELAY"))?;
        tcp.set_read_timeout(Some(self.cfg.io_timeout))
            .map_err(io("setting a timeout"))?;
        tcp.set_write_timeout(Some(self.cfg.io_timeout))
            .map_err(io("setting a timeout"))?;
        let mut hello = self.hello.clone();
        hello.flags |= HELLO_ACKS_WANTED | HELLO_WALL_CLOCK;
        hello.next_seq = self.kept.front().map_or(self.next_seq, |k| k.seq);
        let welcome = handshake(&mut link, &hello)?;
        let acks = welcome.flags & 1 != 0;
        if !acks && self.receiver_acks {
            log::warn!(
                "{} does not acknowledge frames (a receiver without a store?): frames are sent once, not kept",
                welcome.receiver
            );
        }
        self.receiver_acks = acks;
        if welcome.durable_seq > self.sent_max && welcome.durable_seq >= hello.next_seq {
            // The receiver holds an earlier run of this sender up to there.
            self.renumber(welcome.durable_seq + 1)?;
        } else {
            self.acked(welcome.durable_seq);
        }
        self.link = Some(link);
        self.inbox.clear();
        for s in self.series.clone() {
            self.write_series(&s)?;
        }
        let mut resent = 0u64;
        let now = Instant::now();
        for k in self.kept.iter_mut() {
            let Some(l) = self.link.as_mut() else { break };
            l.write_all(&k.frame).map_err(io("resending a frame"))?;
            if k.sent.is_some() {
                resent += 1;
            }
            k.sent.get_or_insert(now);
            self.sent_max = self.sent_max.max(k.seq);
        }
        self.stats
            .frames_resent
            .fetch_add(resent, Ordering::Relaxed);
        if !self.receiver_acks {
            self.acked(self.sent_max);
        }
        let n = self.stats.connections.fetch_add(1, Ordering::Relaxed) + 1;
        self.last_error = None;
        log::info!(
            "connected to {} (connection {n}): durable through {}, {resent} frames sent again, {} kept",
            welcome.receiver,
            welcome.durable_seq,
            self.kept.len()
        );
        Ok(())
    }

    /// Gives the kept frames new sequence numbers from `from` on.
    fn renumber(&mut self, from: u64) -> Result<(), WireError> {
        let mut seq = from;
        for k in self.kept.iter_mut() {
            let payload = k.frame[FRAME_HEADER_LEN_V2..].to_vec();
            let h = super::parse_header(&k.frame, usize::MAX)?;
            k.frame.clear();
            encode_data_v2(
                seq,
                h.series_ref,
                h.record_count,
                h.arrival_us,
                &payload,
                &mut k.frame,
            )?;
            k.seq = seq;
            seq += 1;
        }
        log::info!(
            "the receiver holds an earlier run of this sender: sequence numbers continue at {from}"
        );
        self.next_seq = seq;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
