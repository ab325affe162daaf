//! TLS for the telemetry stream (rustls, TLS 1.2 and 1.3, the `ring`
//! provider), both ends: [`ServerTls`] wraps accepted connections of a
//! receiver (`loom-app --tls-cert/--tls-key`), [`ClientTls`] wraps a
//! sender's connection (`tcp-replay`, `loom-agent`: `--tls-ca`).
//!
//! The handshake completes inside [`ServerTls::accept`] and
//! [`ClientTls::connect`], under a time limit, so its failures surface
//! there with a reason a person can act on (a plain-text client on a TLS
//! port, a certificate the CA did not sign) instead of as a broken frame
//! later. Afterwards the stream is an ordinary `Read + Write`: a receiver's
//! loop is generic over it, so the plain-TCP path keeps its own
//! monomorphised code and pays nothing for TLS being possible.

use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConnection, ConnectionCommon, ServerConnection, SideData, StreamOwned};

/// How long a peer may take to complete a TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes a receiver's TLS socket reads at once (see [`BufferedSocket`]).
pub const SOCKET_READ_BUFFER: usize = 1 << 20;

/// A receiver's stream after the handshake: plaintext frames out of TLS
/// records out of a [`BufferedSocket`].
pub type ServerStream = StreamOwned<ServerConnection, BufferedSocket>;

// Likely causes appended to handshake errors.
const HINT_NOT_TLS_CLIENT: &str = "; the client does not speak TLS (plain TCP to a TLS port?)";
const HINT_CLIENT_REFUSED: &str = "; the client refused this server's certificate \
    (not signed by the CA it trusts, or not for the name it expects)";
const HINT_SILENT_CLIENT: &str = "; no handshake within 10 s";
const HINT_UNTRUSTED_SERVER: &str = "; check that --tls-ca holds the CA that signed the \
    server's certificate and that the certificate names the server as --tls-server-name says";
const HINT_NOT_TLS_SERVER: &str = "; is the server's port TLS (loom-app --tls-cert)?";

/// Why TLS could not be set up or a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("{flag} {path}: {reason}")]
    Pem {
        /// The flag that named the file (`--tls-cert`, `--tls-key`, `--tls-ca`).
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the certificates or key (e.g. a key that does not
    /// match the certificate).
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The server name given for the peer is not a DNS name or IP address.
    #[error("TLS server name {0:?} is not a valid DNS name or IP address")]
    ServerName(String),
    /// The handshake failed; `hint` says the likely cause.
    #[error("TLS handshake with {peer} failed: {source}{hint}")]
    Handshake {
        /// The peer's address (or name).
        peer: String,
        /// The cause (a rustls error travels inside an `io::Error`).
        #[source]
        source: io::Error,
        /// A likely cause, starting with "; " (or empty).
        hint: &'static str,
    },
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(flag: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = |reason: String| TlsError::Pem {
        flag,
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(pem(
            "no PEM certificate (BEGIN CERTIFICATE) in the file".into()
        ));
    }
    Ok(certs)
}

/// The server side: a certificate chain and its key.
#[derive(Debug, Clone)]
pub struct ServerTls {
    config: Arc<rustls::ServerConfig>,
}

impl ServerTls {
    /// Reads a PEM certificate chain (leaf first) and a PEM private key
    /// (PKCS#8, PKCS#1 or SEC1); errors name the flag and the file.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
        let certs = read_certs("--tls-cert", cert)?;
        let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Pem {
            flag: "--tls-key",
            path: key.to_path_buf(),
            reason: e.to_string(),
        })?;
        ServerTls::from_der(certs, key)
    }

    /// From DER certificates (leaf first) and key.
    pub fn from_der(
        certs: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<ServerTls, TlsError> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        // No TLS 1.3 session tickets: a sender only writes, so tickets would
        // sit unread in its socket, and closing a socket with unread data
        // sends a reset that makes the receiver's kernel discard the frames
        // it has not read yet. (Senders reconnect rarely; resumption would
        // save one round trip.)
        config.send_tls13_tickets = 0;
        Ok(ServerTls {
            config: Arc::new(config),
        })
    }

    /// Completes the server handshake on an accepted connection within
    /// [`HANDSHAKE_TIMEOUT`] and returns the encrypted stream (with no read
    /// timeout left on the socket). A client that speaks plain TCP (or
    /// nothing) gets an error saying so; its connection is closed.
    pub fn accept(&self, tcp: TcpStream, peer: &str) -> Result<ServerStream, TlsError> {
        let conn = ServerConnection::new(Arc::clone(&self.config))?;
        let sock = BufferedSocket(BufReader::with_capacity(SOCKET_READ_BUFFER, tcp));
        handshake(conn, sock, peer, |e| match rustls_error(e) {
            Some(rustls::Error::AlertReceived(_)) => HINT_CLIENT_REFUSED,
            Some(rustls::Error::InvalidMessage(_)) => HINT_NOT_TLS_CLIENT,
            None if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
            {
                HINT_SILENT_CLIENT
            }
            _ => "",
        })
    }
}

/// The rustls error inside an I/O error from a handshake, if it is one.
fn rustls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

/// The client side: the CA certificates that may sign the server's.
#[derive(Debug, Clone)]
pub struct ClientTls {
    config: Arc<rustls::ClientConfig>,
}

impl ClientTls {
    /// Trusts the PEM certificates in `ca` (and nothing else); errors name
    /// `--tls-ca` and the file.
    pub fn from_ca_file(ca: &Path) -> Result<ClientTls, TlsError> {
        ClientTls::from_der(read_certs("--tls-ca", ca)?)
    }

    /// Trusts the given DER certificates.
    pub fn from_der(cas: Vec<CertificateDer<'static>>) -> Result<ClientTls, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for c in cas {
            roots.add(c)?;
        }
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }

    /// Completes the client handshake with `server_name` (a DNS name or IP
    /// address the server's certificate must carry) within
    /// [`HANDSHAKE_TIMEOUT`]. A certificate the CA did not sign, or one for
    /// another name, is an error saying so.
    pub fn connect(
        &self,
        tcp: TcpStream,
        server_name: &str,
    ) -> Result<StreamOwned<ClientConnection, TcpStream>, TlsError> {
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|_| TlsError::ServerName(server_name.into()))?;
        let conn = ClientConnection::new(Arc::clone(&self.config), name)?;
        handshake(conn, tcp, server_name, |e| match rustls_error(e) {
            Some(rustls::Error::InvalidCertificate(_)) => HINT_UNTRUSTED_SERVER,
            Some(rustls::Error::InvalidMessage(_)) => HINT_NOT_TLS_SERVER,
            None if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
            ) =>
            {
                HINT_NOT_TLS_SERVER
            }
            _ => "",
        })
    }
}

/// Drives a handshake to its end under [`HANDSHAKE_TIMEOUT`] and clears the
/// socket's timeouts again (the stream itself waits as long as the peer is
/// silent, as plain TCP does).
fn handshake<C, D, T>(
    conn: C,
    mut sock: T,
    peer: &str,
    hint: impl Fn(&io::Error) -> &'static str,
) -> Result<StreamOwned<C, T>, TlsError>
where
    C: DerefMut + Deref<Target = ConnectionCommon<D>>,
    D: SideData,
    T: Read + Write + Socket,
{
    let mut conn = conn;
    let fail = |source: io::Error| TlsError::Handshake {
        peer: peer.to_string(),
        hint: hint(&source),
        source,
    };
    set_timeouts(sock.tcp(), Some(HANDSHAKE_TIMEOUT)).map_err(fail)?;
    while conn.is_handshaking() {
        // On a protocol error rustls has already sent the peer its alert.
        conn.complete_io(&mut sock).map_err(fail)?;
    }
    set_timeouts(sock.tcp(), None).map_err(fail)?;
    Ok(StreamOwned::new(conn, sock))
}

fn set_timeouts(sock: &TcpStream, t: Option<Duration>) -> io::Result<()> {
    sock.set_read_timeout(t)?;
    sock.set_write_timeout(t)
}

/// A socket under TLS.
pub trait Socket {
    /// The TCP socket (for timeouts and shutdown).
    fn tcp(&self) -> &TcpStream;
}

impl Socket for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

/// A receiver's TCP socket with a read buffer: rustls reads TLS records 4 KiB
/// at a time, so without it a 16 KiB record costs four system calls; with it
/// one `read` takes up to [`SOCKET_READ_BUFFER`] bytes, as the plain path's
/// reads do. Writes (handshake messages, alerts) go straight to the socket.
pub struct BufferedSocket(BufReader<TcpStream>);

impl Socket for BufferedSocket {
    fn tcp(&self) -> &TcpStream {
        self.0.get_ref()
    }
}

impl Read for BufferedSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for BufferedSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.get_mut().write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.get_mut().write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.get_mut().flush()
    }
}

/// A sender's connection: plain TCP or TLS over it. Writes go to the one
/// or the other (a branch per `write` of a whole chunk of frames: nothing
/// next to the cost of the write itself).
pub enum ClientStream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP (boxed: the TLS state is large).
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl ClientStream {
    /// The TCP socket underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            ClientStream::Plain(s) => s,
            ClientStream::Tls(s) => &s.sock,
        }
    }

    /// Ends the stream cleanly: everything written is flushed, TLS sends its
    /// close_notify (so the receiver sees a clean end, not a truncation),
    /// and the write half of the socket is shut.
    pub fn finish(&mut self) -> io::Result<()> {
        if let ClientStream::Tls(s) = self {
            s.conn.send_close_notify();
        }
        self.flush()?;
        self.tcp().shutdown(Shutdown::Write)
    }
}

impl telemetry::wire::resend::Link for ClientStream {
    fn tcp(&self) -> &TcpStream {
        ClientStream::tcp(self)
    }
}

impl From<TcpStream> for ClientStream {
    fn from(s: TcpStream) -> Self {
        ClientStream::Plain(s)
    }
}

impl From<StreamOwned<ClientConnection, TcpStream>> for ClientStream {
    fn from(s: StreamOwned<ClientConnection, TcpStream>) -> Self {
        ClientStream::Tls(Box::new(s))
    }
}

impl Read for ClientStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.read(buf),
            ClientStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for ClientStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.write(buf),
            ClientStream::Tls(s) => s.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.write_all(buf),
            ClientStream::Tls(s) => s.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.flush(),
            ClientStream::Tls(s) => s.flush(),
        }
    }
}
