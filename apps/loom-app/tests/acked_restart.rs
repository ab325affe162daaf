//! Acknowledged TCP stream across crashes: a paced `tcp-replay --acked`
//! (the library under the binary) sends a recording while the real
//! `loom-app` is SIGKILLed and restarted on the same store at random
//! points (seed printed; `LOOM_ACK_KILL_SEED`, `LOOM_ACK_KILLS` to repeat or
//! change). At the end the store holds every record the sender generated
//! exactly once, each at its own time: compared by brute force with the
//! recording (series, time, bytes), as multisets.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use replay::AckedConfig;
use replay::ReplayConfig;
use replay::{generate_file, GenConfig, Phase};
use telemetry::raw::{self, SourceKey};
use telemetry::wire::resend::{Connector, Link};
use telemetry::RecordingReader;

fn start_app(store: &Path, addr: &str) -> testing::LoomApp {
    testing::LoomApp::builder()
        .addr(addr)
        .tcp_only()
        .machine_quiet()
        .args(["--persist-interval-ms", "1000"])
        .acks(100)
        .store(store)
        .start()
}

fn free_addr() -> String {
    format!("127.0.0.1:{}", testing::free_port())
}

fn recording(dir: &Path, rate: f64, duration_s: f64, seed: u64) -> PathBuf {
    let rec = dir.join("p2");
    let cfg = GenConfig {
        phase: Phase::P2,
        duration_s,
        rate,
        seed,
        ..GenConfig::default()
    };
    generate_file(&cfg, &rec).expect("generate a recording");
    rec
}

/// What the store must hold: (series, time, bytes) of every record of the
/// recording, its time shifted by `offset`, under the sender's `host` tag.
fn expected(rec: &Path, offset: u64, host: &str) -> Vec<(u64, u64, Vec<u8>)> {
    let mut out = Vec::new();
    for b in RecordingReader::open(rec).expect("open recording") {
        for r in &b.expect("read batch").records {
            let mut bytes = Vec::new();
            r.encode_into(&mut bytes);
            let kind = r.kind();
            raw::shift_event_time(kind, &mut bytes, offset);
            let key = SourceKey::of(kind, &bytes);
            let id = telemetry::source::with_tags(&key.tag(), &[("host", host)]);
            out.push((id, raw::event_time(kind, &bytes), bytes));
        }
    }
    out.sort_unstable();
    out
}

fn stored(store: &Path) -> Vec<(u64, u64, Vec<u8>)> {
    let r = loom::open_read_only(store).expect("open the store read-only");
    let snap = r.snapshot();
    let mut out = Vec::new();
    for id in snap.sources() {
        r.scan(id, 0, u64::MAX, |ts, bytes| {
            out.push((id.0, ts, bytes.to_vec()))
        })
        .expect("scan");
    }
    out.sort_unstable();
    out
}

#[test]
#[allow(clippy::too_many_lines)] // A test reads as one scenario; the length rule is for code outside tests.
fn acked_replay_survives_ten_sigkills_exactly_once_at_own_times() {
    let kills: u32 = std::env::var("LOOM_ACK_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("LOOM_ACK_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    let seed0 = seed;
    println!("kill points from LOOM_ACK_KILL_SEED={seed} ({kills} kills)");
    let dir = tempfile::tempdir().expect("tempdir");
    // 30 000 records/s for 16 s, paced at its own speed: kills land while
    // the stream runs.
    let rec = recording(dir.path(), 30_000.0, 16.0, 5);
    let store = dir.path().join("store");
    let addr = free_addr();
    let mut app = start_app(&store, &addr);

    let cfg = ReplayConfig {
        file_path: rec.clone(),
        addr: addr.clone(),
        duration_s: None,
        speed: 1.0,
        no_wait: false,
        connect_timeout_s: 60.0,
        loops: None,
    };
    let acked = AckedConfig {
        sender_id: 0xac4e_d000 ^ seed,
        token: String::new(),
        max_unacked_bytes: 256 << 20,
        drain_timeout: Duration::from_secs(120),
    };
    let (offset_tx, offset_rx) = mpsc::channel();
    let replay = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let connect: Connector = Box::new(move || {
                let sa = addr
                    .to_socket_addrs()
                    .map_err(|source| telemetry::WireError::Io {
                        context: "resolving",
                        source,
                    })?;
                let sa = sa.into_iter().next().expect("an address");
                let s =
                    TcpStream::connect_timeout(&sa, Duration::from_secs(2)).map_err(|source| {
                        telemetry::WireError::Io {
                            context: "connecting",
                            source,
                        }
                    })?;
                Ok(Box::new(s) as Box<dyn Link>)
            });
            replay::run_acked(
                &cfg,
                &acked,
                connect,
                |o| offset_tx.send(o).expect("offset"),
                |_| {},
                || false,
            )
        })
    };
    let offset = offset_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the replay started");
    let mut rng = replay::SplitMix64::new(seed);
    for k in 0..kills {
        let wait_ms = 300 + rng.below(1200);
        std::thread::sleep(Duration::from_millis(wait_ms));
        app.process.kill();
        println!("kill {} after {wait_ms} ms", k + 1);
        app = start_app(&store, &addr);
    }
    let summary = replay
        .join()
        .expect("replay thread")
        .expect("the acked replay ends with every frame acknowledged");
    println!("{summary:?}");
    assert_eq!(summary.unacked_frames, 0);
    assert!(summary.connections >= 2, "the sender reconnected");
    // A clean stop: loom-app persists and exits.
    let end = app.stop();
    assert!(end.success(), "{}", end.stderr);
    if let Some(stats) = end.line("STATS ") {
        println!("last run: {stats}");
    }
    let want = expected(&rec, offset, &telemetry::wire::sender::hostname());
    let got = stored(&store);
    assert_eq!(
        summary.records as usize,
        want.len(),
        "the sender sent the recording"
    );
    if got != want {
        let (mut missing, mut extra) = (0usize, 0usize);
        let (mut i, mut j) = (0, 0);
        while i < want.len() || j < got.len() {
            match (want.get(i), got.get(j)) {
                (Some(a), Some(b)) if a == b => (i, j) = (i + 1, j + 1),
                (Some(a), Some(b)) if a < b => (missing, i) = (missing + 1, i + 1),
                (Some(_), Some(_)) | (None, Some(_)) => (extra, j) = (extra + 1, j + 1),
                (Some(_), None) => (missing, i) = (missing + 1, i + 1),
                (None, None) => break,
            }
        }
        panic!(
            "store differs from the recording: {missing} records missing, {extra} extra (of {}; LOOM_ACK_KILL_SEED={seed0})",
            want.len()
        );
    }
}
