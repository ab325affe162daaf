//! The connection to loom-app: HELLO (token, host, the agent's stable id,
//! the next sequence number), the series declarations again after every
//! reconnect, data frames in order with per-sender sequence numbers.
//!
//! When loom-app is away the sender retries with backoff (100 ms doubling
//! to 5 s) and the outbox holds up to `buffer_bytes` of records; records
//! offered beyond that are dropped and counted (`queue` drops). A frame the
//! write of which failed is sent again on the next connection. Frames the
//! kernel accepted into the socket before loom-app died are not known to
//! be lost until loom-app acknowledges what it stored (the reserved ACK
//! frame, not sent yet): that loss is not counted.

use std::io::{BufWriter, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use telemetry::wire::{self, sender, FrameType, Hello, SeriesTags};

use crate::series::Item;

const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Who the agent is, for its HELLO.
#[derive(Debug, Clone)]
pub struct Identity {
    /// loom-app's address.
    pub to: String,
    /// Token (empty: none).
    pub token: String,
    /// The `host` tag.
    pub host: String,
    /// Stable sender id.
    pub sender_id: u64,
}

/// Counters of the sending side.
#[derive(Debug, Default)]
pub struct SendStats {
    /// Records written to loom-app.
    pub sent: AtomicU64,
    /// Records dropped because the outbox was full.
    pub queue_drops: AtomicU64,
    /// Records dropped at shutdown because loom-app could not be reached.
    pub send_drops: AtomicU64,
    /// Successful connections (the first one included).
    pub connections: AtomicU64,
    /// Whether a connection is up.
    pub connected: AtomicBool,
    /// Bytes of records in the outbox.
    pub queued_bytes: AtomicU64,
    /// `queue_drops` by probe (index as `probes::agent::PROBE_NAMES`).
    pub queue_drops_by_probe: [AtomicU64; 4],
    /// `send_drops` by probe.
    pub send_drops_by_probe: [AtomicU64; 4],
}

/// Adds the records of `payload` to `by_probe`, by the probe that made them.
fn count_by_probe(payload: &[u8], by_probe: &[AtomicU64; 4]) {
    for (kind, _) in telemetry::raw::records(payload) {
        let i = match kind {
            telemetry::Kind::Syscall => 0,
            telemetry::Kind::PageCache => 1,
            telemetry::Kind::BlockIo => 2,
            telemetry::Kind::RunQueue => 3,
            _ => continue,
        };
        by_probe[i].fetch_add(1, Ordering::Relaxed);
    }
}

/// The producer's end: offers items without ever blocking.
pub struct Outbox {
    tx: Sender<Item>,
    max_bytes: u64,
    stats: Arc<SendStats>,
}

impl Outbox {
    /// Queues `item`; a data item past the buffer bound is dropped and its
    /// records counted. Declarations are never dropped (they are small and
    /// needed by later data).
    pub fn offer(&self, item: Item) {
        if let Item::Data {
            records, payload, ..
        } = &item
        {
            let n = payload.len() as u64;
            let q = self.stats.queued_bytes.fetch_add(n, Ordering::Relaxed);
            if q + n > self.max_bytes {
                self.stats.queued_bytes.fetch_sub(n, Ordering::Relaxed);
                self.stats
                    .queue_drops
                    .fetch_add(u64::from(*records), Ordering::Relaxed);
                count_by_probe(payload, &self.stats.queue_drops_by_probe);
                return;
            }
        }
        let _ = self.tx.send(item);
    }
}

/// Starts the sender thread; it ends once the outbox is dropped and
/// everything is sent, or `stop` is set and nothing more can be sent
/// within `drain_deadline`.
pub fn start(
    id: Identity,
    max_bytes: u64,
    stats: Arc<SendStats>,
    stop: Arc<AtomicBool>,
    drain_deadline: Duration,
) -> (Outbox, JoinHandle<()>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let outbox = Outbox {
        tx,
        max_bytes,
        stats: stats.clone(),
    };
    let t = std::thread::spawn(move || {
        Connection {
            id,
            stats,
            stop,
            drain_deadline,
            out: None,
            declared: Vec::new(),
            next_seq: 1,
            stopping_since: None,
        }
        .run(rx)
    });
    (outbox, t)
}

struct Connection {
    id: Identity,
    stats: Arc<SendStats>,
    stop: Arc<AtomicBool>,
    drain_deadline: Duration,
    out: Option<BufWriter<TcpStream>>,
    declared: Vec<SeriesTags>,
    next_seq: u64,
    stopping_since: Option<Instant>,
}

impl Connection {
    fn run(mut self, rx: Receiver<Item>) {
        loop {
            let item = match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(i) => i,
                Err(RecvTimeoutError::Timeout) => {
                    self.flush();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            match item {
                Item::Series(s) => {
                    self.declared.push(s.clone());
                    if self.out.is_some() {
                        if let Err(e) = self.write_series(&s) {
                            self.lost(&e);
                        }
                    }
                }
                Item::Data {
                    series_ref,
                    records,
                    payload,
                } => {
                    self.deliver(series_ref, records, &payload);
                    self.stats
                        .queued_bytes
                        .fetch_sub(payload.len() as u64, Ordering::Relaxed);
                }
            }
            if rx.is_empty() {
                self.flush();
            }
        }
        self.flush();
    }

    /// Sends one data frame, reconnecting as needed; gives up (counted)
    /// only while stopping past the drain deadline.
    fn deliver(&mut self, series_ref: u32, records: u32, payload: &[u8]) {
        let mut frame = Vec::with_capacity(payload.len() + wire::FRAME_HEADER_LEN_V2);
        let mut backoff = BACKOFF_MIN;
        loop {
            if self.out.is_none() && self.connect().is_err() {
                if self.give_up() {
                    self.stats
                        .send_drops
                        .fetch_add(u64::from(records), Ordering::Relaxed);
                    count_by_probe(payload, &self.stats.send_drops_by_probe);
                    return;
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
            frame.clear();
            if wire::encode_data_v2(
                self.next_seq,
                series_ref,
                records,
                sender::now_us(),
                payload,
                &mut frame,
            )
            .is_err()
            {
                self.stats
                    .send_drops
                    .fetch_add(u64::from(records), Ordering::Relaxed);
                return;
            }
            let written = match self.out.as_mut() {
                Some(out) => out.write_all(&frame),
                None => continue,
            };
            match written {
                Ok(()) => {
                    self.next_seq += 1;
                    self.stats
                        .sent
                        .fetch_add(u64::from(records), Ordering::Relaxed);
                    return;
                }
                Err(e) => self.lost(&e),
            }
        }
    }

    fn give_up(&mut self) -> bool {
        if !self.stop.load(Ordering::Relaxed) {
            return false;
        }
        let since = *self.stopping_since.get_or_insert_with(Instant::now);
        since.elapsed() >= self.drain_deadline
    }

    fn lost(&mut self, e: &dyn std::fmt::Display) {
        if self.out.take().is_some() {
            log::warn!("connection to {} lost: {e}; reconnecting", self.id.to);
        }
        self.stats.connected.store(false, Ordering::Relaxed);
    }

    fn flush(&mut self) {
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.flush() {
                self.lost(&e);
            }
        }
    }

    fn connect(&mut self) -> Result<(), telemetry::WireError> {
        let io = |context| move |source| telemetry::WireError::Io { context, source };
        let mut stream = TcpStream::connect(&self.id.to).map_err(io("connecting"))?;
        stream
            .set_nodelay(true)
            .map_err(io("setting TCP_NODELAY"))?;
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .map_err(io("setting a timeout"))?;
        stream
            .set_write_timeout(Some(IO_TIMEOUT))
            .map_err(io("setting a timeout"))?;
        let hello = Hello {
            sender_id: self.id.sender_id,
            flags: wire::control::HELLO_WALL_CLOCK,
            next_seq: self.next_seq,
            token: self.id.token.clone(),
            host: self.id.host.clone(),
            agent: format!("loom-agent {}", env!("CARGO_PKG_VERSION")),
        };
        match sender::handshake(&mut stream, &hello) {
            Ok(_) => {}
            Err(e @ telemetry::WireError::Refused(_)) => {
                log::error!("{} refused the agent: {e}", self.id.to);
                return Err(e);
            }
            Err(e) => return Err(e),
        }
        self.out = Some(BufWriter::with_capacity(1 << 20, stream));
        for s in self.declared.clone() {
            if let Err(e) = self.write_series(&s) {
                self.lost(&e);
                return Err(telemetry::WireError::BadControl(e.to_string()));
            }
        }
        let n = self.stats.connections.fetch_add(1, Ordering::Relaxed) + 1;
        self.stats.connected.store(true, Ordering::Relaxed);
        log::info!(
            "connected to {} (connection {n}, from sequence {})",
            self.id.to,
            self.next_seq
        );
        Ok(())
    }

    fn write_series(&mut self, s: &SeriesTags) -> std::io::Result<()> {
        let mut f = Vec::new();
        wire::encode_control(FrameType::Series, 0, sender::now_us(), &s.encode(), &mut f)
            .map_err(std::io::Error::other)?;
        match self.out.as_mut() {
            Some(out) => out.write_all(&f),
            None => Ok(()),
        }
    }
}
