//! tcp-replay behaviour against an in-test endpoint.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;

use replay::{connect_with_retry, run_paced as run, EndReason, ReplayConfig, ReplayError};
use replay::{generate_file, GenConfig, Phase};
use telemetry::wire::FrameReader;
use telemetry::Batch;

fn recording(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("rec");
    generate_file(
        &GenConfig {
            phase: Phase::P2,
            duration_s: 0.5,
            rate: 2000.0,
            ..GenConfig::default()
        },
        &p,
    )
    .unwrap();
    p
}

fn config(file: &Path, addr: String, duration_s: Option<f64>) -> ReplayConfig {
    ReplayConfig {
        file_path: file.to_path_buf(),
        addr,
        duration_s,
        speed: 1.0,
        no_wait: true,
        connect_timeout_s: 10.0,
        loops: None,
    }
}

#[test]
fn looping_shifts_timestamps_forward_and_everything_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let file = recording(dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let sink = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut r = FrameReader::new(s);
        let mut got = Vec::new();
        while let Some(b) = r.read_batch().unwrap() {
            got.push(b);
        }
        got
    });
    let cfg = config(&file, addr.clone(), Some(0.3));
    let stream = connect_with_retry(&addr, 10.0, |_| {}).unwrap();
    let summary = run(&cfg, stream, |_| {}, || false).unwrap();
    let got: Vec<Batch> = sink.join().unwrap();
    assert_eq!(summary.reason, EndReason::Finished);
    assert!(summary.loops >= 2, "{summary:?}");
    assert_eq!(got.len() as u64, summary.batches);
    assert_eq!(
        got.iter().map(|b| b.records.len() as u64).sum::<u64>(),
        summary.records
    );
    let mut last_arrival = 0;
    let mut last: HashMap<u64, u64> = HashMap::new();
    for b in &got {
        assert!(b.arrival_us >= last_arrival);
        last_arrival = b.arrival_us;
        for r in &b.records {
            let e = last.entry(r.source_id()).or_insert(0);
            assert!(r.timestamp_us() >= *e, "source went back in time");
            *e = r.timestamp_us();
        }
    }
}

#[test]
fn endpoint_going_away_ends_the_replay_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let file = recording(dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let closer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut r = FrameReader::new(s);
        r.read_batch().unwrap();
        // Dropping the stream with unread data makes the kernel reset it.
    });
    let cfg = config(&file, addr.clone(), Some(60.0));
    let stream = connect_with_retry(&addr, 10.0, |_| {}).unwrap();
    let summary = run(&cfg, stream, |_| {}, || false).unwrap();
    closer.join().unwrap();
    assert_eq!(summary.reason, EndReason::EndpointClosed);
}

#[test]
fn missing_endpoint_times_out_with_the_address() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let mut waits = 0;
    let err = connect_with_retry(&addr, 0.6, |_| waits += 1).unwrap_err();
    assert!(matches!(err, ReplayError::ConnectTimeout { .. }));
    assert!(err.to_string().contains(&addr));
    assert!(waits >= 1);
}

#[test]
fn bad_speed_and_missing_file_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = recording(dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut cfg = config(&file, addr.clone(), None);
    cfg.speed = 0.0;
    let s = std::net::TcpStream::connect(&addr).unwrap();
    assert!(matches!(
        run(&cfg, s, |_| {}, || false),
        Err(ReplayError::Config(_))
    ));
    let cfg = config(&dir.path().join("nope"), addr.clone(), None);
    let s = std::net::TcpStream::connect(&addr).unwrap();
    let err = run(&cfg, s, |_| {}, || false).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

/// Sends the recording once and returns what the endpoint received.
fn send_once(file: &Path, no_wait: bool, speed: f64) -> (Vec<Batch>, replay::Summary) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let sink = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut r = FrameReader::new(s);
        let mut got = Vec::new();
        while let Some(b) = r.read_batch().unwrap() {
            got.push(b);
        }
        got
    });
    let mut cfg = config(file, addr.clone(), None);
    cfg.no_wait = no_wait;
    cfg.speed = speed;
    let stream = connect_with_retry(&addr, 10.0, |_| {}).unwrap();
    let summary = run(&cfg, stream, |_| {}, || false).unwrap();
    (sink.join().unwrap(), summary)
}

#[test]
fn no_wait_merges_batches_into_larger_frames_and_paced_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = recording(dir.path());
    let recorded: Vec<Batch> = telemetry::RecordingReader::open(&file)
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    let want: Vec<_> = recorded.iter().flat_map(|b| b.records.clone()).collect();

    // Paced (fast, to keep the test short): frames of whole recorded
    // batches due within 1 ms of wall time of the frame's first (50 ms of
    // recorded time at speed 50), with the first one's arrival time.
    let (paced, summary) = send_once(&file, false, 50.0);
    let got: Vec<_> = paced.iter().flat_map(|b| b.records.clone()).collect();
    assert_eq!(got, want);
    assert_eq!(summary.batches, paced.len() as u64);
    for f in &paced {
        let first = recorded
            .iter()
            .position(|r| r.arrival_us == f.arrival_us)
            .expect("a frame starts at a recorded batch");
        let within: usize = recorded[first..]
            .iter()
            .take_while(|r| r.arrival_us <= f.arrival_us + 50_000)
            .map(|r| r.records.len())
            .sum();
        assert!(f.records.len() <= within, "a frame reaches past 1 ms");
    }
    // At the recorded pace, batches 1 ms or more apart stay apart.
    assert!(
        paced.len() * 2 > recorded.len() / 50,
        "{} frames",
        paced.len()
    );

    // No wait: the same records in fewer, larger frames, each at most 4096
    // records and carrying its first batch's arrival time.
    let (merged, summary) = send_once(&file, true, 1.0);
    let got: Vec<_> = merged.iter().flat_map(|b| b.records.clone()).collect();
    assert_eq!(got, want);
    assert_eq!(summary.batches, merged.len() as u64);
    assert_eq!(summary.records, want.len() as u64);
    assert!(
        merged.len() * 4 < recorded.len(),
        "{} frames for {} batches",
        merged.len(),
        recorded.len()
    );
    assert!(merged.iter().all(|b| b.records.len() <= 4096));
    assert!(merged
        .iter()
        .all(|b| recorded.iter().any(|r| r.arrival_us == b.arrival_us)));
}
