//! `tcp-replay --tls-ca` (the real binary) into a TLS receiver on loopback,
//! with certificates made by `rcgen` here: every record arrives; a CA that
//! did not sign the receiver's certificate makes tcp-replay fail with an
//! error naming `--tls-ca`, and so does a plain receiver.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use endpoint::{BufferPool, Counters, Frames, Message, ReceiveConfig, ServerTls};
use replay::{generate_file, GenConfig, Phase};
use telemetry::RecordingReader;

struct Msg;

impl Message for Msg {
    fn frames(_: Frames) -> Self {
        Msg
    }
    fn connection_ended(_: Instant) -> Self {
        Msg
    }
    fn into_frames(self) -> Option<Frames> {
        None
    }
}

/// (ca, cert, key) PEM files: a CA and a certificate it signed for `localhost`.
fn make_pki(dir: &Path, tag: &str) -> (PathBuf, PathBuf, PathBuf) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("loom test CA {tag}"));
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let p = (
        dir.join(format!("{tag}-ca.pem")),
        dir.join(format!("{tag}-cert.pem")),
        dir.join(format!("{tag}-key.pem")),
    );
    std::fs::write(&p.0, ca.pem()).unwrap();
    std::fs::write(&p.1, cert.pem()).unwrap();
    std::fs::write(&p.2, key.serialize_pem()).unwrap();
    p
}

/// A receiver on a free port; returns its port and counters.
fn receiver(tls: Option<ServerTls>) -> (u16, Arc<Counters>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = crossbeam_channel::unbounded::<Msg>();
    std::thread::spawn(move || for _ in rx.iter() {});
    let counters = Arc::new(Counters::default());
    let cfg = ReceiveConfig {
        tls,
        ..ReceiveConfig::new(1 << 20)
    };
    let (c, pool) = (counters.clone(), BufferPool::new(8, 1 << 16));
    std::thread::spawn(move || endpoint::listen(listener, tx, c, pool, cfg));
    (port, counters)
}

fn tcp_replay(rec: &Path, port: u16, ca: &Path) -> std::process::Output {
    Command::new(testing::binary("tcp-replay"))
        .arg("--file-path")
        .arg(rec)
        .args(["--addr", &format!("127.0.0.1:{port}"), "--no-wait"])
        .args(["--tls-server-name", "localhost"])
        .args(["--connect-timeout-s", "10", "--tls-ca"])
        .arg(ca)
        .output()
        .expect("run tcp-replay")
}

#[test]
fn tcp_replay_speaks_tls_with_the_right_ca_only() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_pki(dir.path(), "a");
    let (other_ca, _, _) = make_pki(dir.path(), "b");
    let rec = dir.path().join("p1");
    let gen = GenConfig {
        phase: Phase::P1,
        duration_s: 2.0,
        rate: 10_000.0,
        seed: 3,
        ..GenConfig::default()
    };
    generate_file(&gen, &rec).unwrap();
    let total: u64 = RecordingReader::open(&rec)
        .unwrap()
        .map(|b| b.unwrap().records.len() as u64)
        .sum();

    let (port, counters) = receiver(Some(ServerTls::from_pem_files(&cert, &key).unwrap()));
    let out = tcp_replay(&rec, port, &ca);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("(TLS)"), "{stdout}");
    let end = Instant::now() + Duration::from_secs(20);
    while Counters::get(&counters.records_received) < total && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        Counters::get(&counters.records_received),
        total,
        "bad {} conns {} {stdout}",
        Counters::get(&counters.bad_connections),
        Counters::get(&counters.connections)
    );
    assert_eq!(Counters::get(&counters.bad_connections), 0);

    let out = tcp_replay(&rec, port, &other_ca);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("TLS handshake with localhost failed") && err.contains("--tls-ca"),
        "{err}"
    );

    let (plain_port, _) = receiver(None);
    let out = tcp_replay(&rec, plain_port, &ca);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is the server's port TLS"), "{err}");
}
