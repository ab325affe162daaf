//! Listener and per-connection receiving threads.
//!
//! Each connection gets one thread that reads frames with
//! [`telemetry::wire::FrameReader`] into a pooled buffer, checked but not decoded.
//! Frames whose bytes are already buffered join the same group (up to
//! [`ReceiveConfig::group_bytes`]); as soon as the next frame would need a
//! read that can wait for the peer, the group is stamped with its arrival
//! time and offered to the bounded queue with `try_send`. So grouping never
//! delays a frame, and a fast sender gets few, large messages. A full queue
//! (in messages, or in bytes: [`ReceiveConfig::max_queued_bytes`]) drops the
//! group (counted); a bad frame closes only its own connection,
//! logged, after the valid frames before it were handed on.
//!
//! A connection speaks wire version 1 (data frames only) or version 2 (a
//! HELLO first, see [`crate::session`]); with a token configured, only a
//! version-2 HELLO carrying it is accepted: anything else is refused
//! (REFUSE frame where the peer speaks version 2), logged, counted in
//! `auth_refused`, and the connection closed.
//!
//! A sender that asks for acknowledgements ([`ReceiveConfig::acks`], see
//! [`crate::acks`]) gets ACK frames, its resent frames are skipped, and its
//! groups wait for room in the queue instead of being dropped.
//!
//! With [`ReceiveConfig::tls`] every connection first completes a TLS
//! handshake in its own thread; one that fails (a plain-text client, a
//! silent one) is closed alone, logged and counted as bad. The frame loop
//! is generic over the stream, so plain TCP runs the same code as before.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, TrySendError};
use loom::{Admission, ConnectionGate};
use telemetry::wire::FrameReader;
use telemetry::wire::{self, control, FrameType, Hello, Incoming, SeriesTags, Welcome};

use crate::acks::{AckBook, TcpBacked, Ticking};
use crate::counters::Counters;
use crate::pool::BufferPool;
use crate::session::{token_matches, SeriesContext, Session};
use crate::tls::ServerTls;

pub use crate::frames::{Frames, Segment};
pub use crate::message::{Message, StreamMessage};

/// Receiving settings.
#[derive(Debug, Clone)]
pub struct ReceiveConfig {
    /// Largest accepted frame payload, bytes.
    pub max_payload: usize,
    /// A group is handed on once it holds this many bytes (a single larger
    /// frame travels alone).
    pub group_bytes: usize,
    /// Bytes read from the socket at once.
    pub read_buffer: usize,
    /// Groups are dropped (counted) while the groups offered and not yet
    /// consumed hold more than this many bytes: the queue's memory bound,
    /// whatever the senders' frame sizes.
    pub max_queued_bytes: u64,
    /// The token a sender must present in its HELLO; `None` accepts every
    /// sender, version 1 included.
    pub auth_token: Option<String>,
    /// Named in WELCOME frames (program and version).
    pub receiver_name: String,
    /// Accept TLS connections only (rustls), with this certificate and key;
    /// `None` for plain TCP.
    pub tls: Option<ServerTls>,
    /// Acknowledge the frames of senders that ask for it (HELLO flag bit
    /// 0) with this book of per-sender marks; `None`: WELCOME says no ACKs
    /// will come.
    pub acks: Option<Arc<AckBook>>,
    /// At most this many connections open at once (each has a receiving
    /// thread, so this bounds the threads too); at the limit the one idle
    /// the longest is closed to make room, or with none idle the new one
    /// is refused: a REFUSE frame, then closed. `None`: unbounded.
    pub gate: Option<Arc<ConnectionGate>>,
    /// A sender must complete a frame at least this often (from its
    /// connection's start, then from its previous frame), or its
    /// connection is closed: idle and slowloris senders free their thread.
    /// `None`: wait forever.
    pub idle_timeout: Option<Duration>,
}

impl ReceiveConfig {
    /// Defaults with the given payload bound: groups of up to 256 KiB (at
    /// 20 M records/s about 0.5 ms of data), 1 MiB socket reads, at most
    /// 1 GiB queued (about 40 M records of the P2 mix: 1.6 s at 24 M
    /// records/s, enough to ride out a slow persist; 256 MiB dropped up to
    /// a quarter of a 24 M records/s stream on this project's 2-core
    /// machine while other work ran).
    pub fn new(max_payload: usize) -> Self {
        ReceiveConfig {
            max_payload,
            group_bytes: 256 << 10,
            read_buffer: 1 << 20,
            max_queued_bytes: 1 << 30,
            auth_token: None,
            receiver_name: "loom endpoint".to_string(),
            tls: None,
            acks: None,
            gate: None,
            idle_timeout: None,
        }
    }
}

/// Accepts connections forever, one receiving thread each.
pub fn listen<M: Message>(
    listener: TcpListener,
    tx: Sender<M>,
    counters: Arc<Counters>,
    pool: BufferPool,
    cfg: ReceiveConfig,
) {
    listen_until(listener, tx, counters, pool, cfg, &AtomicBool::new(false))
}

/// [`listen`] until `stop` is set: the loop checks it after every accept,
/// so whoever sets it then connects once to wake the listener up (that
/// connection is closed unread). Connections already accepted go on.
pub fn listen_until<M: Message>(
    listener: TcpListener,
    tx: Sender<M>,
    counters: Arc<Counters>,
    pool: BufferPool,
    cfg: ReceiveConfig,
    stop: &AtomicBool,
) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        match conn {
            Ok(mut stream) => {
                let admission = match &cfg.gate {
                    Some(g) => match g.enter() {
                        Some(a) => Some(a),
                        None => {
                            // Counted and logged (once per interval) by
                            // the gate; a version-2 peer learns why. A
                            // fresh socket's send buffer is empty, so
                            // this write does not block the listener.
                            let _ = stream.write_all(&refusal("too many connections open"));
                            continue;
                        }
                    },
                    None => None,
                };
                let id = counters.connections.fetch_add(1, Ordering::Relaxed) + 1;
                let peer = stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| "?".into());
                log::info!("connection {id} from {peer} accepted");
                let (tx, counters, pool, cfg) =
                    (tx.clone(), counters.clone(), pool.clone(), cfg.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("recv-{id}"))
                    .spawn(move || {
                        let conn = Connection {
                            id,
                            peer: &peer,
                            tx: &tx,
                            counters: &counters,
                            pool: &pool,
                            max_queued_bytes: cfg.max_queued_bytes,
                        };
                        conn.run(stream, &cfg, admission)
                    });
                if let Err(e) = spawned {
                    log::error!("cannot start a receiving thread for connection {id}: {e}");
                }
            }
            Err(e) => log::warn!("accept failed: {e}"),
        }
    }
}

/// A REFUSE frame saying `why`.
fn refusal(why: &str) -> Vec<u8> {
    let mut f = Vec::new();
    let _ = wire::encode_control(
        FrameType::Refuse,
        0,
        crate::epoch_us(),
        &control::encode_refusal(why),
        &mut f,
    );
    f
}

struct Connection<'a, M> {
    id: u64,
    peer: &'a str,
    tx: &'a Sender<M>,
    counters: &'a Arc<Counters>,
    pool: &'a BufferPool,
    max_queued_bytes: u64,
}

/// The group being filled.
struct Group {
    payload: Vec<u8>,
    frames: u64,
    records: u64,
    segments: Vec<Segment>,
    last_seq: u64,
    acked_sender: Option<u64>,
}

impl Group {
    /// Adds a data frame's records (already appended to `payload`).
    fn add(&mut self, records: u64, context: Option<Arc<SeriesContext>>) {
        self.frames += 1;
        self.records += records;
        let Some(ctx) = context else { return };
        match self.segments.last_mut() {
            Some(Segment {
                records: n,
                context: Some(c),
            }) if Arc::ptr_eq(c, &ctx) => *n += records,
            _ => self.segments.push(Segment {
                records,
                context: Some(ctx),
            }),
        }
    }
}

/// Why a connection is closed early.
enum Close {
    /// Token missing or wrong.
    Auth(String),
    /// Protocol violation.
    Bad(String),
    /// No complete frame within the idle timeout.
    Idle,
}

impl<M: Message> Connection<'_, M> {
    /// Receives from one accepted connection, through TLS when configured.
    fn run(&self, stream: TcpStream, cfg: &ReceiveConfig, admission: Option<Admission>) {
        match &cfg.tls {
            None => self.receive(stream, cfg, admission),
            Some(tls) => match tls.accept(stream, self.peer) {
                Ok(s) => self.receive(s, cfg, admission),
                // No frame was ever read, so no stream ended: the
                // connection does not count towards --stop-after-connections.
                Err(e) => {
                    Counters::add(&self.counters.bad_connections, 1);
                    log::warn!("connection {} closed: {e}", self.id);
                }
            },
        }
    }

    /// A DATA frame just read into `group.payload` (from byte `at.0`;
    /// `at.1`: the connection's first frame): checked against the session,
    /// then kept, or cut off again as a resend of a frame already held.
    /// `Ok(true)`: a frame was taken (new or duplicate).
    fn take_data(
        &self,
        h: &wire::FrameHeader,
        at: (usize, bool),
        session: &mut Option<Session>,
        group: &mut Group,
        frames: &mut u64,
        cfg: &ReceiveConfig,
    ) -> Result<bool, Close> {
        let (old, first) = at;
        let checked = self
            .admit_data(h, first, session, cfg)
            .and_then(|ctx| self.new_frame(h, session, cfg).map(|new| (ctx, new)));
        match checked {
            Ok((_, false)) => {
                // A resend of a frame this app already holds.
                group.payload.truncate(old);
                Counters::add(&self.counters.duplicate_frames, 1);
                Counters::add(&self.counters.duplicate_records, u64::from(h.record_count));
                Ok(true)
            }
            Ok((ctx, true)) => {
                group.acked_sender = session
                    .as_ref()
                    .filter(|s| s.acked)
                    .map(|s| s.hello.sender_id);
                *frames += 1;
                group.add(u64::from(h.record_count), ctx);
                group.last_seq = group.last_seq.max(h.seq);
                Counters::add(&self.counters.batches_received, 1);
                Counters::add(&self.counters.records_received, u64::from(h.record_count));
                Ok(true)
            }
            Err(e) => {
                group.payload.truncate(old);
                Err(e)
            }
        }
    }

    fn receive<S: Read + Write + TcpBacked>(
        &self,
        stream: S,
        cfg: &ReceiveConfig,
        admission: Option<Admission>,
    ) {
        let ticking = match Ticking::with_deadline(stream, cfg.idle_timeout, admission) {
            Ok(t) => t,
            Err(e) => {
                Counters::add(&self.counters.bad_connections, 1);
                log::warn!("connection {} closed: cannot set its timeout: {e}", self.id);
                return;
            }
        };
        let mut reader = FrameReader::with_max_payload(
            BufReader::with_capacity(cfg.read_buffer, ticking),
            cfg.max_payload,
        );
        let mut frames = 0u64;
        let mut group = Group {
            payload: self.pool.take(),
            frames: 0,
            records: 0,
            segments: Vec::new(),
            last_seq: 0,
            acked_sender: None,
        };
        let mut session: Option<Session> = None;
        let open = loop {
            let old = group.payload.len();
            let first = frames == 0 && session.is_none();
            let read = reader.read_frame_into(&mut group.payload);
            if matches!(read, Ok(Some(_))) {
                reader.get_mut().get_mut().frame_done();
            }
            let step = match read {
                Ok(Some(Incoming::Data(h))) => {
                    let at = (old, first);
                    self.take_data(&h, at, &mut session, &mut group, &mut frames, cfg)
                }
                Ok(Some(Incoming::Control(h, p))) => self
                    .control(h.frame_type, &p, first, &mut session, &mut reader, cfg)
                    .map(|()| false),
                Ok(None) => {
                    log::info!(
                        "connection {} from {} closed after {frames} frames",
                        self.id,
                        self.peer
                    );
                    break true;
                }
                Err(_) if reader.get_mut().get_mut().expired() => Err(Close::Idle),
                Err(e) => Err(Close::Bad(format!("bad frame: {e}"))),
            };
            match step {
                Ok(false) => continue,
                Ok(true) => {
                    if group.payload.len() < cfg.group_bytes && reader.has_buffered_frame() {
                        continue;
                    }
                    if group.frames > 0 && !self.hand_on(&mut group) {
                        break false;
                    }
                }
                Err(Close::Auth(why)) => {
                    Counters::add(&self.counters.auth_refused, 1);
                    log::warn!("connection {} from {} refused: {why}", self.id, self.peer);
                    // A version-1 peer never reads it; a version-2 one
                    // learns why before the close.
                    let _ = reader.get_mut().get_mut().write_all(&refusal(&why));
                    break false;
                }
                Err(Close::Idle) => {
                    // Counted and logged once per interval by the gate: a
                    // flood of idle connections must not flood the log.
                    if let Some(g) = &cfg.gate {
                        g.timed_out();
                    }
                    log::debug!(
                        "connection {} from {} closed after {frames} frames: no complete frame within {:?}",
                        self.id,
                        self.peer,
                        cfg.idle_timeout.unwrap_or_default()
                    );
                    break true;
                }
                Err(Close::Bad(why)) => {
                    Counters::add(&self.counters.bad_connections, 1);
                    log::warn!(
                        "connection {} from {} closed after {frames} good frames: {why}",
                        self.id,
                        self.peer
                    );
                    break true;
                }
            }
        };
        // The good frames before the end (or before a bad frame) count.
        if open && group.frames > 0 {
            self.hand_on(&mut group);
        }
        self.pool.give(std::mem::take(&mut group.payload));
        // Blocking send: the connection is over, so waiting here slows no sender.
        let _ = self.tx.send(M::connection_ended(Instant::now()));
    }

    /// Checks a data frame against the connection's version and session;
    /// its series context (`None` for version 1).
    fn admit_data(
        &self,
        h: &wire::FrameHeader,
        first: bool,
        session: &mut Option<Session>,
        cfg: &ReceiveConfig,
    ) -> Result<Option<Arc<SeriesContext>>, Close> {
        match (h.version, session.as_mut()) {
            (wire::FRAME_VERSION, None) if first && cfg.auth_token.is_some() => Err(Close::Auth(
                "a version-1 sender presents no token (--auth-token-file is set)".into(),
            )),
            (wire::FRAME_VERSION, None) => Ok(None),
            (wire::FRAME_VERSION, Some(_)) => Err(Close::Bad(
                "a version-1 frame on a version-2 connection".into(),
            )),
            (_, None) => Err(Close::Bad("a version-2 data frame before the HELLO".into())),
            (_, Some(s)) => s.data(h.seq, h.series_ref).map(Some).map_err(Close::Bad),
        }
    }

    /// Whether an accepted data frame is new: always for unacknowledged
    /// senders; for acknowledged ones, false when the app already holds it
    /// (a resend after a reconnect), an error when a newer connection of
    /// the same sender has taken over.
    fn new_frame(
        &self,
        h: &wire::FrameHeader,
        session: &Option<Session>,
        cfg: &ReceiveConfig,
    ) -> Result<bool, Close> {
        match (session, &cfg.acks) {
            (Some(s), Some(book)) if s.acked => book
                .accept(s.hello.sender_id, self.id, h.seq)
                .map_err(Close::Bad),
            _ => Ok(true),
        }
    }

    /// Handles a control frame: HELLO (first frame only; token checked,
    /// WELCOME sent) or SERIES (after HELLO); anything else closes.
    fn control<S: Read + Write + TcpBacked>(
        &self,
        t: FrameType,
        payload: &[u8],
        first: bool,
        session: &mut Option<Session>,
        reader: &mut FrameReader<BufReader<Ticking<S>>>,
        cfg: &ReceiveConfig,
    ) -> Result<(), Close> {
        let bad = |e: telemetry::WireError| Close::Bad(e.to_string());
        match (t, session.as_mut()) {
            (FrameType::Hello, None) if first => {
                let hello = Hello::decode(payload).map_err(bad)?;
                if let Some(want) = &cfg.auth_token {
                    if hello.token.is_empty() {
                        return Err(Close::Auth("HELLO carries no token".into()));
                    }
                    if !token_matches(&hello.token, want) {
                        return Err(Close::Auth("HELLO carries a wrong token".into()));
                    }
                }
                log::info!(
                    "connection {} from {}: {} on host {} (sender {:#x}, from sequence {})",
                    self.id,
                    self.peer,
                    hello.agent,
                    hello.host,
                    hello.sender_id,
                    hello.next_seq
                );
                let acked = match &cfg.acks {
                    Some(book) if hello.flags & control::HELLO_ACKS_WANTED != 0 => {
                        // A resent record must land at the time it had the
                        // first time, whatever this app's clock or offset.
                        if !hello.wall_clock() {
                            return Err(Close::Bad(
                                "acknowledgements need record times in wall-clock µs (HELLO flag bit 1)"
                                    .into(),
                            ));
                        }
                        let durable = book.hello(hello.sender_id, self.id).map_err(Close::Bad)?;
                        Some((book.clone(), durable))
                    }
                    _ => None,
                };
                let welcome = Welcome {
                    durable_seq: acked.as_ref().map_or(0, |a| a.1),
                    flags: u32::from(acked.is_some()),
                    receiver: cfg.receiver_name.clone(),
                };
                let mut f = Vec::new();
                wire::encode_control(
                    FrameType::Welcome,
                    0,
                    crate::epoch_us(),
                    &welcome.encode(),
                    &mut f,
                )
                .map_err(bad)?;
                let out = reader.get_mut().get_mut();
                out.write_all(&f)
                    .and_then(|()| out.flush())
                    .map_err(|e| Close::Bad(format!("cannot answer the HELLO: {e}")))?;
                let mut s = Session::new(hello);
                if let Some((book, durable)) = acked {
                    log::info!(
                        "connection {}: sender {:#x} acknowledged, durable through sequence {durable}",
                        self.id,
                        s.hello.sender_id
                    );
                    out.start_acks(book, s.hello.sender_id, durable)
                        .map_err(|e| Close::Bad(format!("cannot set up acknowledgements: {e}")))?;
                    s.acked = true;
                }
                *session = Some(s);
                Ok(())
            }
            (FrameType::Series, Some(s)) => {
                let tags = SeriesTags::decode(payload).map_err(bad)?;
                s.declare(tags).map_err(Close::Bad)
            }
            (t, _) => Err(Close::Bad(format!("unexpected {t:?} frame"))),
        }
    }

    /// Offers the group to the queue and starts a new one; false when the
    /// app has gone (the queue is disconnected).
    fn hand_on(&self, group: &mut Group) -> bool {
        let c = self.counters;
        let payload = std::mem::replace(&mut group.payload, self.pool.take());
        let (n_frames, n) = (group.frames, group.records);
        (group.frames, group.records) = (0, 0);
        let segments = std::mem::take(&mut group.segments);
        let last_seq = group.last_seq;
        let acked_sender = group.acked_sender.take();
        if c.ingest_stopped.load(Ordering::Relaxed) {
            Counters::add(&c.records_skipped, n);
            self.pool.give(payload);
            return true;
        }
        let arrival_us = crate::epoch_us();
        let _ = c.first_arrival_us.compare_exchange(
            0,
            arrival_us,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        let bytes = payload.len() as u64;
        let queued = c.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
        let mut f = Frames::new(arrival_us, payload, n_frames, n);
        f.segments = segments;
        f.last_seq = last_seq;
        f.acked_sender = acked_sender;
        f.queued = Some((Arc::clone(c), bytes));
        let refused = if acked_sender.is_some() {
            // Acknowledged frames are never dropped: the sender waits
            // (TCP back-pressure) while the queue is full.
            match self.tx.send(M::frames(f)) {
                Ok(()) => None,
                Err(_) => return false,
            }
        } else if queued.saturating_add(bytes) > self.max_queued_bytes {
            Some(f)
        } else {
            match self.tx.try_send(M::frames(f)) {
                Ok(()) => None,
                Err(TrySendError::Full(m)) => m.into_frames(),
                Err(TrySendError::Disconnected(_)) => return false,
            }
        };
        if let Some(f) = refused {
            Counters::add(&c.batches_dropped, n_frames);
            Counters::add(&c.records_dropped, n);
            self.pool.give(f.into_payload());
        }
        true
    }
}
