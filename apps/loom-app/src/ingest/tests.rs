//! The ingest thread on a real store: arrival-mode order, late records refused, the event offset.

use super::*;
use endpoint::Frames;

fn config() -> IngestConfig {
    IngestConfig {
        timestamps: TimestampMode::Arrival,
        event_offset_us: None,
        resume_after_us: 0,
        sync_interval: Duration::from_millis(5),
        persist_interval: Duration::from_secs(1),
        stop_after_connections: None,
        reorder_window_us: 0,
        stop_after_data_us: None,
        acks: None,
        ack_interval: Duration::from_millis(100),
        queue_max_bytes: u64::MAX,
    }
}

/// A framed KV read starting at `start_us`.
fn kv_read(start_us: u64) -> Vec<u8> {
    let mut payload = vec![telemetry::Kind::KvOp as u8];
    telemetry::Record::KvOp(telemetry::KvOp {
        thread_id: 1,
        op: telemetry::KvOpKind::Read,
        start_us,
        duration_us: 9,
    })
    .encode_into(&mut payload);
    payload
}

/// Every record stored of source `id`: (time, start_us field).
fn stored(reader: &loom::Reader, id: SourceId) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    reader
        .scan(id, 0, u64::MAX, |ts, bytes| {
            let start = telemetry::Record::decode(telemetry::Kind::KvOp, bytes)
                .map(|r| match r {
                    telemetry::Record::KvOp(k) => k.start_us,
                    _ => u64::MAX,
                })
                .unwrap_or(u64::MAX);
            out.push((ts, start));
        })
        .unwrap();
    out.sort_unstable();
    out
}

/// Arrival mode: wire-form frames land in their record's source; a
/// group stamped earlier than the one taken before it arrived at the
/// same moment, and nothing is late.
#[test]
fn framed_records_are_pushed_in_order_per_source() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, reader) = loom::open(dir.path(), loom::Config::default()).unwrap();
    let counters = Arc::new(Counters::default());
    let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0);
    let mut ing = Ingest::new(writer, counters.clone(), config(), otlp);
    let read = SourceKey::Kv(false);
    for arrival in [100, 90, 200] {
        ing.frames(&Frames::new(arrival, kv_read(5), 1, 1));
    }
    ing.writer.sync();
    let id = SourceId(read.id());
    assert_eq!(reader.snapshot().sources(), vec![id]);
    assert_eq!(stored(&reader, id), vec![(100, 5), (100, 5), (200, 5)]);
    assert_eq!(Counters::get(&counters.records_ingested), 3);
    assert_eq!(Counters::get(&counters.records_late), 0);
}

/// Event mode: a record older than its source's newest stored record is
/// refused and counted as late, with and without the reorder window;
/// every stored record sits at its own time.
#[test]
fn late_records_are_refused_never_moved() {
    for window_us in [0, 1_000] {
        let dir = tempfile::tempdir().unwrap();
        let (writer, reader) = loom::open(dir.path(), loom::Config::default()).unwrap();
        let counters = Arc::new(Counters::default());
        let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0);
        let cfg = IngestConfig {
            timestamps: TimestampMode::Event,
            event_offset_us: Some(0),
            reorder_window_us: window_us,
            ..config()
        };
        let mut ing = Ingest::new(writer, counters.clone(), cfg, otlp);
        // 10_000 and 10_500 are within the window of each other; 20_000
        // releases both; 9_000 then comes later than the window allows.
        for start in [10_500, 10_000, 20_000, 9_000, 20_000] {
            ing.frames(&Frames::new(0, kv_read(start), 1, 1));
        }
        ing.flush_reorder();
        ing.writer.sync();
        let id = SourceId(SourceKey::Kv(false).id());
        let got = stored(&reader, id);
        assert!(got.iter().all(|(ts, start)| ts == start), "{got:?}");
        let want: Vec<u64> = if window_us == 0 {
            vec![10_500, 20_000, 20_000]
        } else {
            vec![10_000, 10_500, 20_000, 20_000]
        };
        assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), want);
        let late = 5 - want.len() as u64;
        assert_eq!(
            Counters::get(&counters.records_late),
            late,
            "window {window_us}"
        );
        assert_eq!(Counters::get(&counters.records_ingested), want.len() as u64);
    }
}

#[test]
fn event_offset_lands_at_now_or_after_the_store() {
    assert_eq!(event_offset(1_000, 5_000_000, 0), 4_999_000);
    assert_eq!(event_offset(1_000, 5_000_000, 9_000_000), 8_999_001);
    assert_eq!(event_offset(10_000_000, 5_000, 0), 0);
}

/// An acknowledged sender's frame whose record waits in the reorder window
/// is settled (and made durable by the next persist) once any sender's
/// data moves the window past it: it does not wait for the acked sender's
/// next frame.
#[test]
fn an_acked_group_settles_when_other_senders_move_the_window_on() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, _reader) = loom::open(dir.path(), loom::Config::default()).unwrap();
    let counters = Arc::new(Counters::default());
    let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0);
    let book = Arc::new(AckBook::in_memory());
    let cfg = IngestConfig {
        timestamps: TimestampMode::Event,
        event_offset_us: Some(0),
        reorder_window_us: 1_000,
        acks: Some(book.clone()),
        ..config()
    };
    let mut ing = Ingest::new(writer, counters, cfg, otlp);
    let flags =
        telemetry::wire::control::HELLO_ACKS_WANTED | telemetry::wire::control::HELLO_WALL_CLOCK;
    let mut session = endpoint::session::Session::new(telemetry::wire::Hello {
        sender_id: 5,
        flags,
        next_seq: 1,
        token: String::new(),
        host: "h".into(),
        agent: "t".into(),
    });
    let mut f = Frames::new(0, kv_read(10_000), 1, 1);
    f.segments = vec![endpoint::Segment {
        records: 1,
        context: Some(session.data(1, 0).unwrap()),
    }];
    f.last_seq = 1;
    f.acked_sender = Some(5);
    ing.frames(&f);
    assert!(!ing.acks.as_ref().unwrap().due(), "its record is held");
    // An unacknowledged sender's later record moves the window on.
    ing.frames(&Frames::new(0, kv_read(20_000), 1, 1));
    assert!(ing.acks.as_ref().unwrap().due());
    ing.persist();
    assert_eq!(book.durable(5), 1);
}
