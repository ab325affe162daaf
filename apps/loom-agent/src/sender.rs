//! The connection to loom-app, through the shared resending sender
//! ([`telemetry::wire::resend`]): HELLO (token, host, the agent's stable
//! id, "acks wanted", wall-clock times), the series declarations again
//! after every reconnect, data frames with per-sender sequence numbers.
//!
//! Every frame is kept until loom-app acknowledges it as durable; when
//! loom-app restarts (or the link breaks) the sender reconnects with
//! backoff (100 ms doubling to 5 s) and sends again what is not
//! acknowledged, and loom-app stores each record once, at its own time.
//! The frames kept are bounded by `buffer_bytes`: a frame offered beyond
//! that is dropped and counted (`send` drops), as are frames still
//! unacknowledged when the agent stops past its drain deadline. The
//! outbox between the agent's loop and the sender thread holds up to
//! `buffer_bytes` too; records offered beyond that are dropped and counted
//! (`queue` drops).

use probes::agent::PROBES;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use endpoint::{ClientStream, ClientTls};
use telemetry::wire::resend::{
    Connector, Link, ResendConfig, ResendStats, ResendingSender, WhenFull,
};
use telemetry::wire::Hello;

use crate::series::{Item, SeriesBook};

/// Longest a connect attempt waits.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Who the agent is, for its HELLO.
#[derive(Clone)]
pub struct Identity {
    /// loom-app's address.
    pub to: String,
    /// Token (empty: none).
    pub token: String,
    /// The `host` tag.
    pub host: String,
    /// Stable sender id.
    pub sender_id: u64,
    /// TLS: the CA to trust and the name loom-app's certificate carries.
    pub tls: Option<(ClientTls, String)>,
}

/// Counters of the sending side.
#[derive(Debug, Default)]
pub struct SendStats {
    /// Records written to loom-app.
    pub sent: AtomicU64,
    /// Records dropped because the outbox was full.
    pub queue_drops: AtomicU64,
    /// Records dropped because loom-app did not acknowledge them in time:
    /// the frames kept filled `buffer_bytes`, or the agent stopped past
    /// its drain deadline with frames unacknowledged.
    pub send_drops: AtomicU64,
    /// Records loom-app acknowledged as durable.
    pub acked: AtomicU64,
    /// Frames sent again after a reconnect.
    pub resent_frames: AtomicU64,
    /// Successful connections (the first one included).
    pub connections: AtomicU64,
    /// Whether a connection is up.
    pub connected: AtomicBool,
    /// Bytes of records in the outbox.
    pub queued_bytes: AtomicU64,
    /// `queue_drops` by probe (index as `probes::agent::PROBE_NAMES`).
    pub queue_drops_by_probe: [AtomicU64; PROBES],
    /// `send_drops` by probe.
    pub send_drops_by_probe: [AtomicU64; PROBES],
}

/// Adds the records of `payload` to `by_probe`, by the probe that made them.
fn count_by_probe(payload: &[u8], by_probe: &[AtomicU64; PROBES]) {
    for (kind, _) in telemetry::raw::records(payload) {
        let i = match kind {
            telemetry::Kind::Syscall => 0,
            telemetry::Kind::PageCache => 1,
            telemetry::Kind::BlockIo => 2,
            telemetry::Kind::RunQueue => 3,
            telemetry::Kind::Packet => probes::agent::PACKET_PROBE,
            _ => continue,
        };
        by_probe[i].fetch_add(1, Ordering::Relaxed);
    }
}

/// The producer's end: offers items without ever blocking. The items of
/// one flush of the agent's loop go over as one message, so the sender
/// thread wakes once per flush, not once per process's frame (each wake-up
/// spun and yielded in the channel: at the demo's rate that was a fifth of
/// the agent's CPU).
pub struct Outbox {
    tx: Sender<Vec<Item>>,
    max_bytes: u64,
    stats: Arc<SendStats>,
}

impl Outbox {
    /// Whether `item` fits the buffer bound (counted as queued then); a
    /// data item past it is dropped and its records counted. Declarations
    /// are never dropped (they are small and needed by later data).
    fn admit(&self, item: &Item) -> bool {
        if let Item::Data {
            records, payload, ..
        } = item
        {
            let n = payload.len() as u64;
            let q = self.stats.queued_bytes.fetch_add(n, Ordering::Relaxed);
            if q + n > self.max_bytes {
                self.stats.queued_bytes.fetch_sub(n, Ordering::Relaxed);
                self.stats
                    .queue_drops
                    .fetch_add(u64::from(*records), Ordering::Relaxed);
                count_by_probe(payload, &self.stats.queue_drops_by_probe);
                return false;
            }
        }
        true
    }

    /// Hands everything `book` holds (each item admitted by
    /// `admit`) to the sender as one message.
    pub fn send_book(&self, book: &mut SeriesBook) {
        let mut items = Vec::new();
        book.drain(|item| {
            if self.admit(&item) {
                items.push(item);
            }
        });
        if !items.is_empty() {
            let _ = self.tx.send(items);
        }
    }
}

#[cfg(test)]
impl Outbox {
    /// An outbox whose messages the test reads, holding up to `max_bytes`.
    pub(crate) fn for_test(max_bytes: u64) -> (Outbox, Receiver<Vec<Item>>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let stats = Arc::new(SendStats::default());
        (
            Outbox {
                tx,
                max_bytes,
                stats,
            },
            rx,
        )
    }
}

/// Starts the sender thread; it ends once the outbox is dropped and
/// everything is acknowledged, or `stop` is set and nothing more can be
/// acknowledged within `drain_deadline` (what is left is counted). An
/// idle sender reads acknowledgements and retries a connection every
/// `idle_pump` (the agent's `--flush-interval-ms`): data wakes it at every
/// flush of the agent's loop anyway, and each wake-up costs CPU.
pub fn start(
    id: Identity,
    max_bytes: u64,
    stats: Arc<SendStats>,
    stop: Arc<AtomicBool>,
    drain_deadline: Duration,
    idle_pump: Duration,
) -> (Outbox, JoinHandle<()>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let outbox = Outbox {
        tx,
        max_bytes,
        stats: stats.clone(),
    };
    let t = std::thread::spawn(move || {
        let resend = Arc::new(ResendStats::default());
        let hello = Hello {
            sender_id: id.sender_id,
            flags: 0,
            next_seq: 1,
            token: id.token.clone(),
            host: id.host.clone(),
            agent: format!("loom-agent {}", env!("CARGO_PKG_VERSION")),
        };
        let sender = ResendingSender::new(
            connector(&id),
            hello,
            ResendConfig {
                max_unacked_bytes: max_bytes,
                when_full: WhenFull::DropNew,
                io_timeout: Duration::from_secs(5),
                ..ResendConfig::default()
            },
            resend.clone(),
        );
        Pump {
            id,
            stats,
            resend,
            sender,
            stop,
            drain_deadline,
            idle_pump,
            refused: false,
        }
        .run(rx)
    });
    (outbox, t)
}

/// Connects to `id.to`, in TLS when configured.
fn connector(id: &Identity) -> Connector {
    let (to, tls) = (id.to.clone(), id.tls.clone());
    Box::new(move || {
        let io = |context| move |source| telemetry::WireError::Io { context, source };
        let sa = to
            .to_socket_addrs()
            .map_err(io("resolving --to"))?
            .next()
            .ok_or_else(|| io("resolving --to")(std::io::ErrorKind::NotFound.into()))?;
        let tcp = TcpStream::connect_timeout(&sa, CONNECT_TIMEOUT).map_err(io("connecting"))?;
        let stream: ClientStream = match &tls {
            None => tcp.into(),
            Some((tls, name)) => tls
                .connect(tcp, name)
                .map_err(|e| telemetry::WireError::BadControl(e.to_string()))?
                .into(),
        };
        Ok(Box::new(stream) as Box<dyn Link>)
    })
}

struct Pump {
    id: Identity,
    stats: Arc<SendStats>,
    resend: Arc<ResendStats>,
    sender: ResendingSender,
    stop: Arc<AtomicBool>,
    drain_deadline: Duration,
    idle_pump: Duration,
    refused: bool,
}

impl Pump {
    fn run(mut self, rx: Receiver<Vec<Item>>) {
        loop {
            let items = match rx.recv_timeout(self.idle_pump) {
                Ok(i) => i,
                Err(RecvTimeoutError::Timeout) => {
                    self.sender.flush();
                    let r = self.sender.pump(Duration::ZERO);
                    self.check(r);
                    self.publish();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            for item in items {
                self.take(item);
            }
            if rx.is_empty() {
                self.sender.flush();
                let r = self.sender.pump(Duration::ZERO);
                self.check(r);
            }
            self.publish();
        }
        // Everything offered is in the sender: wait for its
        // acknowledgements (reconnecting meanwhile) up to the deadline once
        // the agent is stopping.
        let started = Instant::now();
        loop {
            let left = if self.stop.load(Ordering::Relaxed) {
                self.drain_deadline.saturating_sub(started.elapsed())
            } else {
                Duration::from_secs(3600)
            };
            let r = self.sender.drain(left.min(Duration::from_millis(500)));
            match r {
                Ok(true) => break,
                Ok(false) if left.is_zero() || self.refused => break,
                Ok(false) => {}
                Err(e) => {
                    self.check(Err(e));
                    break;
                }
            }
        }
        self.sender.close();
        self.publish();
        let mut lost = 0u64;
        for payload in self.sender.unacked_payloads() {
            lost += telemetry::raw::records(payload).count() as u64;
            count_by_probe(payload, &self.stats.send_drops_by_probe);
        }
        if lost > 0 {
            log::warn!(
                "{lost} records were not acknowledged by {} before the agent stopped (counted as send drops)",
                self.id.to
            );
        }
        self.stats.send_drops.fetch_add(lost, Ordering::Relaxed);
        self.stats.connected.store(false, Ordering::Relaxed);
    }

    /// Hands one item to the resending sender and counts it.
    fn take(&mut self, item: Item) {
        match item {
            Item::Series(s) => self.sender.declare(s),
            Item::Data {
                series_ref,
                records,
                payload,
            } => {
                self.stats
                    .queued_bytes
                    .fetch_sub(payload.len() as u64, Ordering::Relaxed);
                let dropped = self.resend.frames_dropped.load(Ordering::Relaxed);
                let r = self.sender.send(series_ref, records, &payload);
                self.check(r);
                if self.resend.frames_dropped.load(Ordering::Relaxed) != dropped {
                    self.stats
                        .send_drops
                        .fetch_add(u64::from(records), Ordering::Relaxed);
                    count_by_probe(&payload, &self.stats.send_drops_by_probe);
                } else {
                    self.stats
                        .sent
                        .fetch_add(u64::from(records), Ordering::Relaxed);
                }
            }
        }
    }

    /// Logs a refusal (wrong token) once; the sender keeps its frames and
    /// tries again later.
    fn check(&mut self, r: Result<(), telemetry::WireError>) {
        if let Err(e) = r {
            if !self.refused {
                log::error!("{} refused the agent: {e}", self.id.to);
            }
            self.refused = true;
        }
    }

    fn publish(&self) {
        let s = &self.stats;
        s.connected
            .store(self.sender.connected(), Ordering::Relaxed);
        s.connections.store(
            self.resend.connections.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        s.acked.store(
            self.resend.records_acked.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        s.resent_frames.store(
            self.resend.frames_resent.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }
}
