//! Acknowledged senders on the TCP stream (wire version 2, HELLO flag
//! "acks wanted"): per sender, the highest frame sequence number handed to
//! the app (a frame at or below it is a resend already held, stored once)
//! and the highest one durable (what WELCOME and ACK frames tell the
//! sender).
//!
//! The durable marks are kept in a small file beside the store, rewritten
//! (temporary file, fsync, rename, fsync of the directory) each time the
//! app has persisted newer frames, so a restarted receiver tells a
//! reconnecting sender where to resume even after every other trace of the
//! frames (an intake log, a queue) is gone. The file is written after the
//! data it covers is durable: a crash in between makes the mark lower than
//! the truth, never higher (the sender then resends frames the store holds;
//! the app recognises those by their time, see `loom-app`'s ingest).
//!
//! [`Ticking`] sends a connection's ACK frames from its receiving thread:
//! the socket gets a short read timeout, and every read (or timeout) first
//! writes an ACK when the sender's durable mark moved.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use loom::Admission;
use telemetry::wire::{self, FrameType};

/// Most senders one book tracks; a HELLO from one more is refused.
pub const MAX_SENDERS: usize = 1 << 16;
/// How long an acknowledged connection's read waits before it checks
/// whether an ACK is due.
pub const ACK_TICK: Duration = Duration::from_millis(20);
/// Longest an ACK write may block (the sender does not read).
pub const ACK_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
const HEADER_LINE: &str = "loom acknowledged senders v1";

/// What the book knows of one sender.
#[derive(Debug, Clone, Copy, Default)]
struct Marks {
    /// Highest sequence number handed on (held in memory or stored).
    accepted: u64,
    /// Highest sequence number durable.
    durable: u64,
    /// The connection that may send its frames (the newest HELLO's).
    owner: u64,
}

/// Per-sender sequence marks shared by the receiving threads and the
/// app's ingest thread.
#[derive(Debug)]
pub struct AckBook {
    path: Option<PathBuf>,
    senders: Mutex<HashMap<u64, Marks>>,
    /// Bumped whenever a durable mark moves (receivers check it cheaply).
    version: AtomicU64,
}

/// An error reading or writing the book's file, with the file named.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path}: {source}")]
pub struct AckBookError {
    what: &'static str,
    path: PathBuf,
    #[source]
    source: io::Error,
}

impl AckBook {
    /// A book kept only in memory (tests, apps without a store).
    pub fn in_memory() -> AckBook {
        AckBook {
            path: None,
            senders: Mutex::new(HashMap::new()),
            version: AtomicU64::new(0),
        }
    }

    /// The book kept in `path`, with the durable marks an earlier run left
    /// there (none when the file does not exist). A file that cannot be
    /// read or parsed is an error: starting without it would make resent
    /// frames look new.
    pub fn open(path: &Path) -> Result<AckBook, AckBookError> {
        let err = |what, source| AckBookError {
            what,
            path: path.to_path_buf(),
            source,
        };
        let mut senders = HashMap::new();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let bad =
                    |why: String| err("parsing", io::Error::new(io::ErrorKind::InvalidData, why));
                let mut lines = text.lines();
                if lines.next() != Some(HEADER_LINE) {
                    return Err(bad(format!("the first line is not {HEADER_LINE:?}")));
                }
                for (n, line) in lines.enumerate() {
                    let mut it = line.split_whitespace();
                    let (Some(id), Some(seq), None) = (it.next(), it.next(), it.next()) else {
                        return Err(bad(format!("line {} is not `SENDER_HEX SEQ`", n + 2)));
                    };
                    let id = u64::from_str_radix(id, 16)
                        .map_err(|e| bad(format!("line {}: sender {id:?}: {e}", n + 2)))?;
                    let seq: u64 = seq
                        .parse()
                        .map_err(|e| bad(format!("line {}: sequence {seq:?}: {e}", n + 2)))?;
                    senders.insert(
                        id,
                        Marks {
                            accepted: seq,
                            durable: seq,
                            owner: 0,
                        },
                    );
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(err("reading", e)),
        }
        Ok(AckBook {
            path: Some(path.to_path_buf()),
            senders: Mutex::new(senders),
            version: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Marks>> {
        self.senders.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A HELLO of `sender` on connection `conn`: the connection becomes the
    /// sender's (an older one still open is closed at its next frame); the
    /// sender's durable mark for the WELCOME. An error when the book is full.
    pub fn hello(&self, sender: u64, conn: u64) -> Result<u64, String> {
        let mut s = self.lock();
        let n = s.len();
        match s.get_mut(&sender) {
            Some(m) => {
                m.owner = conn;
                // Frames handed on but not durable may still be lost to a
                // crash; what this run holds stays a duplicate.
                Ok(m.durable)
            }
            None if n >= MAX_SENDERS => Err(format!(
                "this receiver already tracks {MAX_SENDERS} acknowledged senders"
            )),
            None => {
                s.insert(
                    sender,
                    Marks {
                        owner: conn,
                        ..Marks::default()
                    },
                );
                Ok(0)
            }
        }
    }

    /// A data frame `seq` of `sender` on connection `conn`: `Ok(true)` when
    /// it is new (and now counts as handed on), `Ok(false)` when it is a
    /// resend of a frame already held; an error when a newer connection of
    /// the same sender has taken over.
    pub fn accept(&self, sender: u64, conn: u64, seq: u64) -> Result<bool, String> {
        let mut s = self.lock();
        let m = s.entry(sender).or_default();
        if m.owner != conn {
            return Err(format!(
                "sender {sender:#x} connected again (connection {}): this older connection is closed",
                m.owner
            ));
        }
        if seq <= m.accepted {
            return Ok(false);
        }
        m.accepted = seq;
        Ok(true)
    }

    /// The sender's durable mark.
    pub fn durable(&self, sender: u64) -> u64 {
        self.lock().get(&sender).map_or(0, |m| m.durable)
    }

    /// Changes whenever some durable mark moved.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The app has made these `(sender, seq)` frames durable (every frame
    /// of the sender up to `seq`): the marks move, the file is rewritten
    /// first. A failed write leaves the marks where they were (the caller
    /// logs and retries at its next persist).
    pub fn advance(&self, durable: &[(u64, u64)]) -> Result<(), AckBookError> {
        if durable.is_empty() {
            return Ok(());
        }
        let mut s = self.lock();
        let mut next = s.clone();
        let mut moved = false;
        for &(id, seq) in durable {
            let m = next.entry(id).or_default();
            if seq > m.durable {
                m.durable = seq;
                m.accepted = m.accepted.max(seq);
                moved = true;
            }
        }
        if !moved {
            return Ok(());
        }
        if let Some(path) = &self.path {
            write_atomically(path, &next)?;
        }
        *s = next;
        drop(s);
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// Writes the marks to `path` so that a crash leaves the old file or the
/// new one, whole.
fn write_atomically(path: &Path, senders: &HashMap<u64, Marks>) -> Result<(), AckBookError> {
    let tmp = path.with_extension("tmp");
    let err = |what, p: &Path| {
        let p = p.to_path_buf();
        move |source| AckBookError {
            what,
            path: p,
            source,
        }
    };
    let mut text = String::with_capacity(32 * senders.len() + 64);
    text.push_str(HEADER_LINE);
    text.push('\n');
    let mut ids: Vec<_> = senders.iter().filter(|(_, m)| m.durable > 0).collect();
    ids.sort_unstable_by_key(|(id, _)| **id);
    for (id, m) in ids {
        text.push_str(&format!("{id:016x} {}\n", m.durable));
    }
    let mut f = File::create(&tmp).map_err(err("creating", &tmp))?;
    f.write_all(text.as_bytes()).map_err(err("writing", &tmp))?;
    f.sync_data().map_err(err("syncing", &tmp))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(err("renaming into", path))?;
    if let Some(dir) = path.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(err("syncing the directory of", path))?;
    }
    Ok(())
}

/// A stream that can set its TCP socket's read timeout.
pub trait TcpBacked {
    /// The TCP socket underneath.
    fn tcp_socket(&self) -> &TcpStream;
}

impl TcpBacked for TcpStream {
    fn tcp_socket(&self) -> &TcpStream {
        self
    }
}

impl TcpBacked for crate::tls::ServerStream {
    fn tcp_socket(&self) -> &TcpStream {
        crate::tls::Socket::tcp(&self.sock)
    }
}

/// The ACK duty of one acknowledged connection.
struct AckDuty {
    book: Arc<AckBook>,
    sender: u64,
    seen_version: u64,
    sent: u64,
}

/// How often an unacknowledged connection's blocked read wakes up to
/// check its frame deadline ([`Ticking::with_deadline`]).
pub const DEADLINE_TICK: Duration = Duration::from_millis(500);

/// A receiving connection's stream; once [`Ticking::start_acks`] is
/// called, reads wait at most [`ACK_TICK`] at a time and an ACK frame is
/// written whenever the sender's durable mark has moved.
///
/// With a frame deadline ([`Ticking::with_deadline`]) a read fails with
/// `TimedOut` once the sender has gone that long without completing a
/// frame ([`Ticking::frame_done`]): an idle sender and one that trickles
/// a frame a byte at a time (slowloris) are both closed, and neither
/// holds its receiving thread longer than the deadline.
pub struct Ticking<S> {
    inner: S,
    duty: Option<AckDuty>,
    /// Longest wait for a complete frame.
    idle: Option<Duration>,
    /// When the current frame must be complete.
    deadline: Option<Instant>,
    /// Whether a read failed because the deadline passed.
    expired: bool,
    /// The connection's place under its listener's limit: touched at every
    /// frame; when the gate evicts it (idle the longest at the limit) the
    /// next read fails like an expired deadline.
    admission: Option<Admission>,
}

impl<S: Read + Write + TcpBacked> Ticking<S> {
    /// Wraps a stream (no ACKs yet).
    pub fn new(inner: S) -> Self {
        Ticking {
            inner,
            duty: None,
            idle: None,
            deadline: None,
            expired: false,
            admission: None,
        }
    }

    /// Wraps a stream whose sender must complete a frame at least every
    /// `idle` (`None`: no deadline); reads wake up every
    /// [`DEADLINE_TICK`] to check it.
    /// `admission` (if any) is touched at every frame and, once evicted,
    /// ends the connection the same way.
    pub fn with_deadline(
        inner: S,
        idle: Option<Duration>,
        admission: Option<Admission>,
    ) -> io::Result<Self> {
        let mut t = Ticking::new(inner);
        if idle.is_some() || admission.is_some() {
            let tick = idle.map_or(DEADLINE_TICK, |d| DEADLINE_TICK.min(d));
            t.inner.tcp_socket().set_read_timeout(Some(tick))?;
        }
        t.admission = admission;
        if let Some(d) = idle {
            t.idle = Some(d);
            t.deadline = Some(Instant::now() + d);
        }
        Ok(t)
    }

    /// A frame was completed: the next one has a full deadline again.
    pub fn frame_done(&mut self) {
        if let Some(a) = &self.admission {
            a.touch();
        }
        if let Some(d) = self.idle {
            self.deadline = Some(Instant::now() + d);
        }
    }

    /// Whether a read failed because no frame came within the deadline.
    pub fn expired(&self) -> bool {
        self.expired
    }

    /// Starts acknowledging `sender`'s frames, from `durable` (told in the WELCOME).
    pub fn start_acks(&mut self, book: Arc<AckBook>, sender: u64, durable: u64) -> io::Result<()> {
        self.inner.tcp_socket().set_read_timeout(Some(ACK_TICK))?;
        // A sender that never reads its ACKs must not hold this thread
        // forever once the socket's send buffer is full: it is closed.
        self.inner
            .tcp_socket()
            .set_write_timeout(Some(ACK_WRITE_TIMEOUT))?;
        self.duty = Some(AckDuty {
            seen_version: book.version(),
            book,
            sender,
            sent: durable,
        });
        Ok(())
    }

    fn ack_if_due(&mut self) -> io::Result<()> {
        let Some(d) = self.duty.as_mut() else {
            return Ok(());
        };
        let v = d.book.version();
        if v == d.seen_version {
            return Ok(());
        }
        d.seen_version = v;
        let durable = d.book.durable(d.sender);
        if durable <= d.sent {
            return Ok(());
        }
        d.sent = durable;
        let mut f = Vec::with_capacity(wire::FRAME_HEADER_LEN_V2);
        wire::encode_control(FrameType::Ack, durable, crate::epoch_us(), &[], &mut f)
            .map_err(io::Error::other)?;
        self.inner.write_all(&f)?;
        self.inner.flush()
    }
}

impl<S: Read + Write + TcpBacked> Read for Ticking<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.deadline.is_some_and(|d| Instant::now() >= d)
                || self.admission.as_ref().is_some_and(|a| a.evicted())
            {
                self.expired = true;
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no complete frame within the idle timeout",
                ));
            }
            self.ack_if_due()?;
            match self.inner.read(buf) {
                Err(e)
                    if (self.duty.is_some()
                        || self.deadline.is_some()
                        || self.admission.is_some())
                        && matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                r => return r,
            }
        }
    }
}

impl<S: Write> Write for Ticking<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_survive_a_reopen_and_resends_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acked-senders");
        let book = AckBook::open(&path).unwrap();
        assert_eq!(book.hello(7, 1).unwrap(), 0);
        assert_eq!(book.accept(7, 1, 1), Ok(true));
        assert_eq!(book.accept(7, 1, 2), Ok(true));
        assert_eq!(book.accept(7, 1, 2), Ok(false));
        // A newer connection of the same sender takes over.
        assert_eq!(book.hello(7, 2).unwrap(), 0);
        assert!(book.accept(7, 1, 3).is_err());
        assert_eq!(book.accept(7, 2, 1), Ok(false));
        assert_eq!(book.accept(7, 2, 3), Ok(true));
        let v = book.version();
        book.advance(&[(7, 2)]).unwrap();
        assert!(book.version() != v);
        assert_eq!(book.durable(7), 2);
        book.advance(&[(7, 1)]).unwrap();
        assert_eq!(book.durable(7), 2, "a mark never goes back");
        drop(book);
        let again = AckBook::open(&path).unwrap();
        assert_eq!(again.durable(7), 2);
        assert_eq!(again.hello(7, 9).unwrap(), 2);
        assert_eq!(again.accept(7, 9, 2), Ok(false));
        assert_eq!(again.accept(7, 9, 3), Ok(true));
        std::fs::write(&path, "something else\n").unwrap();
        assert!(AckBook::open(&path).is_err());
    }
}
