//! TLS on the telemetry stream with real rustls on loopback, certificates
//! made by `rcgen` in the test: records sent over TLS arrive whole; a
//! plain-text client on the TLS port, a client trusting another CA and a
//! silent client are each closed alone (logged, counted as bad) while the
//! listener keeps serving; a TLS client on a plain port and unreadable PEM
//! files get errors that say what is wrong.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use endpoint::{
    BufferPool, ClientStream, ClientTls, Counters, Frames, Message, ReceiveConfig, ServerTls,
};
use telemetry::wire::FrameWriter;
use telemetry::{Batch, KvOp, KvOpKind, Record};

enum Msg {
    Frames(Frames),
    Ended,
}

impl Message for Msg {
    fn frames(f: Frames) -> Self {
        Msg::Frames(f)
    }
    fn connection_ended(_at: Instant) -> Self {
        Msg::Ended
    }
    fn into_frames(self) -> Option<Frames> {
        match self {
            Msg::Frames(f) => Some(f),
            Msg::Ended => None,
        }
    }
}

/// A CA and a server certificate it signed for `localhost` and 127.0.0.1,
/// written as PEM files into `dir`; returns (ca, cert, key) paths.
fn make_pki(dir: &Path, tag: &str) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("loom test CA {tag}"));
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    let paths = (
        dir.join(format!("{tag}-ca.pem")),
        dir.join(format!("{tag}-cert.pem")),
        dir.join(format!("{tag}-key.pem")),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

struct Server {
    addr: String,
    counters: Arc<Counters>,
    rx: Receiver<Msg>,
}

fn serve(tls: Option<ServerTls>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = crossbeam_channel::bounded(1024);
    let counters = Arc::new(Counters::default());
    let cfg = ReceiveConfig {
        tls,
        ..ReceiveConfig::new(1 << 20)
    };
    let (c, pool) = (counters.clone(), BufferPool::new(8, 1 << 16));
    std::thread::spawn(move || endpoint::listen::<Msg>(listener, tx, c, pool, cfg));
    Server { addr, counters, rx }
}

fn batches(n: u64) -> Vec<Batch> {
    (0..n)
        .map(|b| {
            let records = (0..100)
                .map(|i| {
                    Record::KvOp(KvOp {
                        thread_id: b as u32,
                        op: KvOpKind::Read,
                        start_us: b * 1000 + i,
                        duration_us: i * 7 + b,
                    })
                })
                .collect();
            Batch::new(b, records)
        })
        .collect()
}

/// Everything received until the connection ends, decoded.
fn receive_all(rx: &Receiver<Msg>) -> Vec<Record> {
    let mut out = Vec::new();
    let mut dec = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(20)).expect("a message") {
            Msg::Frames(f) => {
                f.decode_into(&mut dec);
                out.append(&mut dec);
            }
            Msg::Ended => return out,
        }
    }
}

fn send(stream: impl Into<ClientStream>, sent: &[Batch]) {
    let mut w = FrameWriter::new(stream.into());
    for b in sent {
        w.write_batch(b).unwrap();
    }
    w.get_mut().finish().unwrap();
}

/// Waits until the server counted `n` bad connections.
fn wait_bad(s: &Server, n: u64) {
    let start = Instant::now();
    while Counters::get(&s.counters.bad_connections) < n {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no bad connection counted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(Counters::get(&s.counters.bad_connections), n);
}

fn tls_client_sends_whole(s: &Server, ca: &Path, name: &str) {
    let sent = batches(50);
    let tcp = TcpStream::connect(&s.addr).unwrap();
    let tls = ClientTls::from_ca_file(ca)
        .unwrap()
        .connect(tcp, name)
        .unwrap();
    send(tls, &sent);
    let want: Vec<Record> = sent.iter().flat_map(|b| b.records.clone()).collect();
    assert_eq!(receive_all(&s.rx), want);
}

#[test]
fn records_over_tls_arrive_whole_and_bad_clients_are_closed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_pki(dir.path(), "good");
    let (other_ca, _, _) = make_pki(dir.path(), "other");
    let s = serve(Some(ServerTls::from_pem_files(&cert, &key).unwrap()));

    tls_client_sends_whole(&s, &ca, "localhost");
    tls_client_sends_whole(&s, &ca, "127.0.0.1");

    // A plain-text client: its frames are never taken; the server closes it.
    let mut plain = TcpStream::connect(&s.addr).unwrap();
    let mut w = FrameWriter::new(&mut plain);
    for b in batches(3) {
        let _ = w.write_batch(&b);
    }
    plain
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut sink = Vec::new();
    // Closed by the server (an alert, then EOF, or a reset): never hangs.
    let _ = plain.read_to_end(&mut sink);
    wait_bad(&s, 1);
    assert_eq!(Counters::get(&s.counters.records_received), 2 * 50 * 100);

    // A client trusting another CA refuses the server, saying why.
    let tcp = TcpStream::connect(&s.addr).unwrap();
    let err = ClientTls::from_ca_file(&other_ca)
        .unwrap()
        .connect(tcp, "localhost")
        .expect_err("the handshake must fail");
    let msg = err.to_string();
    assert!(
        msg.contains("certificate") && msg.contains("--tls-ca"),
        "{msg}"
    );
    wait_bad(&s, 2);

    // A name the certificate does not carry is refused too.
    let tcp = TcpStream::connect(&s.addr).unwrap();
    let msg = ClientTls::from_ca_file(&ca)
        .unwrap()
        .connect(tcp, "db-3.example")
        .expect_err("a wrong name must fail")
        .to_string();
    assert!(msg.contains("certificate"), "{msg}");
    wait_bad(&s, 3);

    // None of that disturbed the listener.
    assert!(
        s.rx.try_recv().is_err(),
        "a refused connection sent something"
    );
    tls_client_sends_whole(&s, &ca, "localhost");
    assert_eq!(Counters::get(&s.counters.connections), 6);
}

#[test]
fn a_tls_client_on_a_plain_port_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, _, _) = make_pki(dir.path(), "p");
    let s = serve(None);
    let tcp = TcpStream::connect(&s.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let msg = ClientTls::from_ca_file(&ca)
        .unwrap()
        .connect(tcp, "localhost")
        .expect_err("a plain server cannot complete a handshake")
        .to_string();
    assert!(msg.contains("TLS handshake with localhost failed"), "{msg}");
    assert!(msg.contains("is the server's port TLS"), "{msg}");
    // The plain receiver read the ClientHello as a bad frame and closed it.
    wait_bad(&s, 1);
}

#[test]
fn pem_errors_name_the_flag_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_pki(dir.path(), "k");
    let missing = dir.path().join("missing.pem");
    let msg = ServerTls::from_pem_files(&missing, &key)
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("--tls-cert ") && msg.contains("missing.pem"),
        "{msg}"
    );
    let msg = ServerTls::from_pem_files(&cert, &cert)
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("--tls-key ") && msg.contains("k-cert.pem"),
        "{msg}"
    );
    let msg = ClientTls::from_ca_file(&key).unwrap_err().to_string();
    assert!(
        msg.starts_with("--tls-ca ") && msg.contains("k-key.pem"),
        "{msg}"
    );
    // A key that does not belong to the certificate.
    let (_, _, other_key) = make_pki(dir.path(), "x");
    assert!(ServerTls::from_pem_files(&cert, &other_key).is_err());
    let _ = ca;
}

#[test]
fn a_silent_client_is_closed_after_the_handshake_timeout_without_blocking_others() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_pki(dir.path(), "s");
    let s = serve(Some(ServerTls::from_pem_files(&cert, &key).unwrap()));
    let mut silent = TcpStream::connect(&s.addr).unwrap();
    // Others are served meanwhile: the handshake runs in the connection's thread.
    tls_client_sends_whole(&s, &ca, "localhost");
    silent
        .set_read_timeout(Some(endpoint::tls::HANDSHAKE_TIMEOUT * 3))
        .unwrap();
    let start = Instant::now();
    let mut sink = [0u8; 64];
    let n = silent.read(&mut sink).unwrap_or(0);
    assert_eq!(n, 0, "the server closes a silent client");
    assert!(start.elapsed() < endpoint::tls::HANDSHAKE_TIMEOUT * 2);
    wait_bad(&s, 1);
    let _ = silent.write_all(b"late");
}
