//! Listener and per-connection receiving threads.
//!
//! Each connection gets one thread that reads frames with
//! [`telemetry::FrameReader`] into a pooled buffer, checked but not decoded.
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
//! With [`ReceiveConfig::tls`] every connection first completes a TLS
//! handshake in its own thread; one that fails (a plain-text client, a
//! silent one) is closed alone, logged and counted as bad. The frame loop
//! is generic over the stream, so plain TCP runs the same code as before.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Sender, TrySendError};
use telemetry::raw::PayloadRecords;
use telemetry::wire::{self, control, FrameType, Hello, Incoming, SeriesTags, Welcome};
use telemetry::{FrameReader, Record};

use crate::counters::Counters;
use crate::pool::BufferPool;
use crate::session::{token_matches, SeriesContext, Session};

/// A run of records in a group that share one series context (version-2
/// senders); records of version-1 frames have none.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Records in the run.
    pub records: u64,
    /// Their context (`None`: version 1, no added tags).
    pub context: Option<Arc<SeriesContext>>,
}
use crate::tls::ServerTls;

/// Frames received together: their payloads back to back, which is itself
/// a valid payload of `records` records (each a tag byte and its encoding).
///
/// Its bytes count as queued (see [`ReceiveConfig::max_queued_bytes`]) from
/// when a receiver offers it until it is dropped or its buffer is taken
/// back with [`Frames::into_payload`].
pub struct Frames {
    /// Arrival at this app (wall clock, µs since the Unix epoch).
    pub arrival_us: u64,
    payload: Vec<u8>,
    /// Frames in the group.
    pub frames: u64,
    /// Records in the group.
    pub records: u64,
    /// Runs of records by series context, in order; empty: every record
    /// is untagged (version 1).
    pub segments: Vec<Segment>,
    /// Version 2: the sequence number of the group's last data frame.
    pub last_seq: u64,
    queued: Option<(Arc<Counters>, u64)>,
}

impl Drop for Frames {
    fn drop(&mut self) {
        if let Some((c, n)) = self.queued.take() {
            c.queued_bytes.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

impl Frames {
    /// A group of checked payloads (`payload` must hold exactly `records`
    /// valid records), not counted as queued.
    pub fn new(arrival_us: u64, payload: Vec<u8>, frames: u64, records: u64) -> Frames {
        Frames {
            arrival_us,
            payload,
            frames,
            records,
            segments: Vec::new(),
            last_seq: 0,
            queued: None,
        }
    }

    /// The runs of records by series context: [`Frames::segments`], or one
    /// untagged run of every record when it is empty.
    pub fn runs(&self) -> Vec<Segment> {
        if self.segments.is_empty() {
            vec![Segment {
                records: self.records,
                context: None,
            }]
        } else {
            self.segments.clone()
        }
    }

    /// The payloads, back to back.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// Ends the group and returns its buffer (for [`BufferPool::give`]).
    pub fn into_payload(mut self) -> Vec<u8> {
        std::mem::take(&mut self.payload)
    }

    /// The records in wire form: `(kind, encoded bytes)`.
    pub fn records(&self) -> PayloadRecords<'_> {
        telemetry::raw::records(&self.payload)
    }

    /// Decodes the records into `out` (cleared first), for consumers that
    /// need them as values.
    pub fn decode_into(&self, out: &mut Vec<Record>) {
        out.clear();
        out.reserve(self.records as usize);
        // The payload was checked on receipt, so every record decodes.
        out.extend(
            self.records()
                .filter_map(|(k, b)| Record::decode(k, b).ok()),
        );
    }
}

/// What a receiver sends to the app's queue; each app's message type wraps
/// these (and may carry more variants of its own).
pub trait Message: Send + 'static {
    /// A group of checked frames.
    fn frames(f: Frames) -> Self;
    /// A connection ended (after all its accepted frames were queued).
    fn connection_ended(at: Instant) -> Self;
    /// The frames of a message the queue refused, so their buffer is reused.
    fn into_frames(self) -> Option<Frames>;
}

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
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
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
                        conn.run(stream, &cfg)
                    });
                if let Err(e) = spawned {
                    log::error!("cannot start a receiving thread for connection {id}: {e}");
                }
            }
            Err(e) => log::warn!("accept failed: {e}"),
        }
    }
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
}

impl<M: Message> Connection<'_, M> {
    /// Receives from one accepted connection, through TLS when configured.
    fn run(&self, stream: TcpStream, cfg: &ReceiveConfig) {
        match &cfg.tls {
            None => self.receive(stream, cfg),
            Some(tls) => match tls.accept(stream, self.peer) {
                Ok(s) => self.receive(s, cfg),
                // No frame was ever read, so no stream ended: the
                // connection does not count towards --stop-after-connections.
                Err(e) => {
                    Counters::add(&self.counters.bad_connections, 1);
                    log::warn!("connection {} closed: {e}", self.id);
                }
            },
        }
    }

    fn receive<S: Read + Write>(&self, stream: S, cfg: &ReceiveConfig) {
        let mut reader = FrameReader::with_max_payload(
            BufReader::with_capacity(cfg.read_buffer, stream),
            cfg.max_payload,
        );
        let mut frames = 0u64;
        let mut group = Group {
            payload: self.pool.take(),
            frames: 0,
            records: 0,
            segments: Vec::new(),
            last_seq: 0,
        };
        let mut session: Option<Session> = None;
        let open = loop {
            let old = group.payload.len();
            let first = frames == 0 && session.is_none();
            let step = match reader.read_frame_into(&mut group.payload) {
                Ok(Some(Incoming::Data(h))) => {
                    let checked = self.admit_data(&h, first, &mut session, cfg);
                    match checked {
                        Ok(ctx) => {
                            frames += 1;
                            group.add(u64::from(h.record_count), ctx);
                            group.last_seq = group.last_seq.max(h.seq);
                            Counters::add(&self.counters.batches_received, 1);
                            Counters::add(
                                &self.counters.records_received,
                                u64::from(h.record_count),
                            );
                            Ok(true)
                        }
                        Err(e) => {
                            group.payload.truncate(old);
                            Err(e)
                        }
                    }
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
                    let mut f = Vec::new();
                    let _ = wire::encode_control(
                        FrameType::Refuse,
                        0,
                        crate::epoch_us(),
                        &control::encode_refusal(&why),
                        &mut f,
                    );
                    let _ = reader.get_mut().get_mut().write_all(&f);
                    break false;
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

    /// Handles a control frame: HELLO (first frame only; token checked,
    /// WELCOME sent) or SERIES (after HELLO); anything else closes.
    fn control<S: Read + Write>(
        &self,
        t: FrameType,
        payload: &[u8],
        first: bool,
        session: &mut Option<Session>,
        reader: &mut FrameReader<BufReader<S>>,
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
                let welcome = Welcome {
                    durable_seq: 0,
                    flags: 0,
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
                *session = Some(Session::new(hello));
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
        f.queued = Some((Arc::clone(c), bytes));
        let refused = if queued.saturating_add(bytes) > self.max_queued_bytes {
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
