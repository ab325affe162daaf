//! TLS on loom-app's TCP ingest, through the real binary and real rustls on
//! loopback (certificates made by `rcgen` here): a recording replayed over
//! TLS (`tcp-replay --tls-ca`'s code path) is stored whole; a plain-text
//! client on the TLS port and a client trusting another CA are closed
//! alone, logged and counted, while the app keeps serving.

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use endpoint::ClientTls;
use replay::{connect_with_retry, run_paced as run, ReplayConfig};
use replay::{generate_file, GenConfig, Phase};
use telemetry::wire::FrameWriter;
use telemetry::RecordingReader;
use testing::LoomApp;

/// A CA and a certificate it signed for `localhost` and 127.0.0.1, as PEM
/// files in `dir`: (ca, cert, key).
fn make_pki(dir: &Path, tag: &str) -> (PathBuf, PathBuf, PathBuf) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("loom test CA {tag}"));
    let ca_key = rcgen::KeyPair::generate().expect("ca key");
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("params");
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &ca, &ca_key).expect("cert");
    let paths = (
        dir.join(format!("{tag}-ca.pem")),
        dir.join(format!("{tag}-cert.pem")),
        dir.join(format!("{tag}-key.pem")),
    );
    std::fs::write(&paths.0, ca.pem()).expect("write");
    std::fs::write(&paths.1, cert.pem()).expect("write");
    std::fs::write(&paths.2, key.serialize_pem()).expect("write");
    paths
}

fn records_in(path: &Path) -> u64 {
    RecordingReader::open(path)
        .expect("open")
        .map(|b| b.expect("batch").records.len() as u64)
        .sum()
}

#[test]
fn a_replay_over_tls_is_stored_whole_and_bad_clients_are_closed_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = make_pki(dir.path(), "good");
    let (other_ca, _, _) = make_pki(dir.path(), "other");
    let rec = dir.path().join("p2");
    let gen = GenConfig {
        phase: Phase::P2,
        duration_s: 5.0,
        rate: 20_000.0,
        seed: 5,
        ..GenConfig::default()
    };
    generate_file(&gen, &rec).expect("generate");
    let total = records_in(&rec);

    let mut app = LoomApp::builder()
        .tcp_only()
        .args(["--stop-after-connections", "1", "--machine-output"])
        .deep_queue()
        .tls(&cert, &key)
        .store(&dir.path().join("store"))
        .start();
    let addr = app.tcp();
    let first = app
        .process
        .wait_for("loom-app listening on ", Duration::from_secs(60));
    let (_, second) = app
        .process
        .next_line(Duration::from_secs(60))
        .expect("a second line");
    assert!(first.contains(&addr), "{first}");
    assert!(second.starts_with("TCP ingest is TLS only"), "{second}");

    // Plain text on the TLS port: closed, nothing taken.
    let mut plain = TcpStream::connect(&addr).expect("connect");
    let mut b = RecordingReader::open(&rec).expect("open");
    let batch = b.next().expect("a batch").expect("read");
    let _ = FrameWriter::new(&mut plain).write_batch(&batch);
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let _ = plain.read_to_end(&mut Vec::new());

    // A client trusting another CA refuses loom-app's certificate.
    let tcp = TcpStream::connect(&addr).expect("connect");
    let err = ClientTls::from_ca_file(&other_ca)
        .expect("ca")
        .connect(tcp, "127.0.0.1")
        .expect_err("the handshake must fail")
        .to_string();
    assert!(err.contains("--tls-ca"), "{err}");

    // The real sender over TLS: every record arrives.
    let cfg = ReplayConfig {
        file_path: rec.clone(),
        addr: addr.clone(),
        duration_s: None,
        speed: 1.0,
        no_wait: true,
        connect_timeout_s: 60.0,
        loops: None,
    };
    let tcp = connect_with_retry(&addr, 60.0, |_| {}).expect("connect");
    let tls = ClientTls::from_ca_file(&ca)
        .expect("ca")
        .connect(tcp, "localhost")
        .expect("handshake");
    let sent = run(&cfg, tls, |_| {}, || false).expect("replay");
    assert_eq!(sent.records, total);

    let end = app.wait();
    let (out, err) = (&end.lines, &end.stderr);
    assert!(end.success(), "{err}");
    let stats = end
        .line("STATS ")
        .unwrap_or_else(|| panic!("no STATS line in {out:?}"));
    // The refused connections did not end ingest early (only a connection
    // that carried a stream counts for --stop-after-connections).
    assert!(
        stats.contains(&format!("received={total} dropped=0 ingested={total} ")),
        "{stats}"
    );
    assert!(stats.contains("bad_connections=2"), "{stats}");
    assert!(
        err.contains("InvalidContentType; the client does not speak TLS"),
        "{err}"
    );
    assert!(
        err.contains("UnknownCA; the client refused this server's certificate"),
        "{err}"
    );
}

/// The acknowledged stream over TLS: ACK frames travel back through the
/// same TLS session the frames come in (written by the receiving thread
/// between its reads), so an acked replay ends with everything
/// acknowledged and stored.
#[test]
fn an_acked_replay_over_tls_is_acknowledged_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = make_pki(dir.path(), "acked");
    let rec = dir.path().join("p2");
    let gen = GenConfig {
        phase: Phase::P2,
        duration_s: 3.0,
        rate: 20_000.0,
        seed: 6,
        ..GenConfig::default()
    };
    generate_file(&gen, &rec).expect("generate");
    let total = records_in(&rec);
    let app = LoomApp::builder()
        .tcp_only()
        .args(["--machine-output"])
        .tls(&cert, &key)
        .store(&dir.path().join("store"))
        .start();
    let addr = app.tcp();
    let cfg = ReplayConfig {
        file_path: rec.clone(),
        addr: addr.clone(),
        duration_s: None,
        speed: 1.0,
        no_wait: true,
        connect_timeout_s: 60.0,
        loops: None,
    };
    let acked = replay::AckedConfig {
        sender_id: 0x715,
        token: String::new(),
        max_unacked_bytes: 64 << 20,
        drain_timeout: Duration::from_secs(60),
    };
    let tls = ClientTls::from_ca_file(&ca).expect("ca");
    let connect: telemetry::wire::resend::Connector = Box::new(move || {
        let tcp = TcpStream::connect(&addr).map_err(|source| telemetry::WireError::Io {
            context: "connecting",
            source,
        })?;
        let s = tls
            .connect(tcp, "localhost")
            .map_err(|e| telemetry::WireError::BadControl(e.to_string()))?;
        Ok(Box::new(endpoint::ClientStream::from(s)) as Box<dyn telemetry::wire::resend::Link>)
    });
    let s =
        replay::run_acked(&cfg, &acked, connect, |_| {}, |_| {}, || false).expect("acked replay");
    assert_eq!(
        (s.records, s.acked, s.unacked_frames),
        (total, total, 0),
        "{s:?}"
    );
    let end = app.stop();
    assert!(end.success(), "{}", end.stderr);
    let stats = end
        .line("STATS ")
        .unwrap_or_else(|| panic!("no STATS line in {:?}", end.lines));
    assert!(stats.contains(&format!("ingested={total} ")), "{stats}");
}
