//! Bounded connections for the OTLP servers: an accept loop that admits a
//! connection only under its listener's [`ConnectionGate`] (which may
//! evict the connection idle the longest to make room), and a stream
//! wrapper that closes a connection on which the server has had nothing to
//! write for the idle timeout, or that the gate evicted.
//!
//! Why "nothing written" rather than "nothing read": a slow sender that
//! trickles a request header or body a byte at a time keeps reading busy
//! but never gets an answer, so it is closed like an idle one; a working
//! client gets answers (HTTP responses; gRPC responses, SETTINGS and PING
//! acknowledgements, flow-control updates) and stays. A request must be
//! answered within the timeout, so it is longer than the OTLP read and
//! acknowledgement timeouts (`cli.rs` checks).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use loom::{Admission, ConnectionGate};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

/// How often a waiting read wakes up to check its deadline and whether
/// the gate evicted the connection.
const TICK: Duration = Duration::from_millis(500);

/// An admitted connection: its place under the gate and its idle timer.
pub struct Guarded {
    inner: TcpStream,
    admission: Admission,
    idle: Duration,
    /// When the connection is closed unless the server writes first.
    deadline: Instant,
    /// Wakes a waiting read every [`TICK`].
    timer: Pin<Box<Sleep>>,
}

impl Guarded {
    /// Whether the connection is to be closed: its deadline passed or the
    /// gate evicted it (idle the longest at the limit). Arms the timer
    /// for the next check otherwise.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            if now >= self.deadline || self.admission.evicted() {
                self.admission.gate().timed_out();
                return true;
            }
            let next = self.deadline.min(now + TICK);
            self.timer.as_mut().reset(next);
        }
        false
    }

    fn timed_out() -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "nothing answered within the idle timeout",
        )
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.expired(cx) {
            return Poll::Ready(Err(Self::timed_out()));
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.admission.touch();
        }
        r
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.deadline = Instant::now() + self.idle;
            self.admission.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for Guarded {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// A listener that admits connections under a gate.
pub struct Gated {
    listener: TcpListener,
    gate: Arc<ConnectionGate>,
    idle: Duration,
}

impl Gated {
    /// Admits `listener`'s connections under `gate`, each closed after
    /// `idle` without an answer.
    pub fn new(listener: TcpListener, gate: Arc<ConnectionGate>, idle: Duration) -> Self {
        Gated {
            listener,
            gate,
            idle,
        }
    }

    /// The next admitted connection; those over the limit are closed
    /// unread (the gate counts and logs them).
    pub async fn next(&self) -> (Guarded, SocketAddr) {
        loop {
            let (stream, addr) = match self.listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it
                    // was taken: wait a little rather than spin.
                    log::debug!("OTLP accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let Some(admission) = self.gate.enter() else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let now = Instant::now();
            let guarded = Guarded {
                inner: stream,
                admission,
                idle: self.idle,
                deadline: now + self.idle,
                timer: Box::pin(tokio::time::sleep_until(now + TICK.min(self.idle))),
            };
            return (guarded, addr);
        }
    }

    /// The connections as a stream, for tonic.
    pub fn incoming(self) -> impl futures_util::Stream<Item = io::Result<Guarded>> + Send {
        futures_util::stream::unfold(self, |g| async move {
            let (c, _) = g.next().await;
            Some((Ok(c), g))
        })
    }
}

impl axum::serve::Listener for Gated {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        self.next().await
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}
