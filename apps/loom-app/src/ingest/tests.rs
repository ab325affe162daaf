//! The ingest thread on a real store: arrival-mode order, late records
//! stored at their own time (or refused past the bound), the event offset.

use super::*;
use endpoint::Frames;
use std::sync::atomic::AtomicU64;

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
    let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0, Arc::default());
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

/// Every record stored of source `id` and its late siblings: (time,
/// start_us field), sorted.
fn stored_with_late(reader: &loom::Reader, id: SourceId) -> Vec<(u64, u64)> {
    let snap = reader.snapshot();
    let siblings = loom::late_siblings(snap.schemas());
    let mut out = stored(reader, id);
    for (sib, (base, _)) in &siblings {
        if *base == id {
            out.extend(stored(reader, *sib));
        }
    }
    out.sort_unstable();
    out
}

/// Late siblings of `id` in the store.
fn siblings_of(reader: &loom::Reader, id: SourceId) -> usize {
    let snap = reader.snapshot();
    loom::late_siblings(snap.schemas())
        .values()
        .filter(|(base, _)| *base == id)
        .count()
}

fn event_ingest(dir: &std::path::Path, window_us: u64) -> (Ingest, loom::Reader, Arc<Counters>) {
    let (writer, reader) = loom::open(dir, loom::Config::default()).unwrap();
    let counters = Arc::new(Counters::default());
    let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0, Arc::default());
    let cfg = IngestConfig {
        timestamps: TimestampMode::Event,
        event_offset_us: Some(0),
        reorder_window_us: window_us,
        ..config()
    };
    (
        Ingest::new(writer, counters.clone(), cfg, otlp),
        reader,
        counters,
    )
}

/// Event mode: a record older than its source's newest stored record is
/// stored at its own time in a late sibling of its source and counted as
/// late stored, with and without the reorder window; every stored record
/// sits at its own time and the series is one source plus its siblings.
#[test]
fn late_records_are_stored_at_their_own_time() {
    for window_us in [0, 1_000] {
        let dir = tempfile::tempdir().unwrap();
        let (mut ing, reader, counters) = event_ingest(dir.path(), window_us);
        // 10_000 and 10_500 are within the window of each other; 20_000
        // releases both; 9_000 then comes later than the window allows.
        let sent = [10_500, 10_000, 20_000, 9_000, 20_000];
        for start in sent {
            ing.frames(&Frames::new(0, kv_read(start), 1, 1));
        }
        ing.flush_reorder();
        ing.writer.sync();
        let id = SourceId(SourceKey::Kv(false).id());
        let got = stored_with_late(&reader, id);
        assert!(got.iter().all(|(ts, start)| ts == start), "{got:?}");
        let mut want = sent.to_vec();
        want.sort_unstable();
        assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), want);
        let late = if window_us == 0 { 2 } else { 1 };
        let c = |a: &AtomicU64| Counters::get(a);
        assert_eq!(
            (c(&counters.records_late), c(&counters.records_late_stored)),
            (0, late),
            "window {window_us}"
        );
        assert_eq!(c(&counters.records_ingested), sent.len() as u64);
        // Without a window 10_000 opens a sibling, and 9_000, older than
        // its newest, a second one.
        assert_eq!(siblings_of(&reader, id) as u64, late, "window {window_us}");
        // The engine's own count over the window sees them all.
        let in_window = |t0, t1| -> u64 {
            std::iter::once(id)
                .chain(loom::late_siblings(reader.snapshot().schemas()).into_keys())
                .map(|s| reader.count(s, t0, t1).unwrap_or(0))
                .sum()
        };
        assert_eq!(in_window(8_000, 9_500), 1);
        assert_eq!(in_window(9_000, 10_500), 3);
    }
}

/// Past `MAX_LATE_GENERATIONS` siblings a late record that fits none is
/// refused and counted as late (never stored at another time); after a
/// crash and reopen the siblings are found again: a late record joins the
/// one whose newest is the latest before it, and no new one is made.
#[test]
fn late_records_past_the_bound_are_refused_and_siblings_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let id = SourceId(SourceKey::Kv(false).id());
    let gens = u64::from(loom::MAX_LATE_GENERATIONS);
    let (mut ing, reader, counters) = event_ingest(dir.path(), 0);
    // Newest first: each late record is older than every sibling's newest.
    let mut sent = vec![100_000];
    sent.extend((1..=gens).map(|k| 100_000 - k * 10_000));
    for &start in &sent {
        ing.frames(&Frames::new(0, kv_read(start), 1, 1));
    }
    let refused = 100_000 - (gens + 1) * 10_000;
    ing.frames(&Frames::new(0, kv_read(refused), 1, 1));
    ing.persist();
    assert_eq!(Counters::get(&counters.records_late), 1);
    assert_eq!(Counters::get(&counters.records_late_stored), gens);
    assert_eq!(siblings_of(&reader, id), gens as usize);
    let got = stored_with_late(&reader, id);
    assert!(got.iter().all(|(ts, start)| ts == start), "{got:?}");
    assert_eq!(got.len(), sent.len());
    ing.writer.simulate_crash();
    drop(reader);

    let (mut ing, reader, counters) = event_ingest(dir.path(), 0);
    // Fits the sibling whose newest is 80_000; then one fits none.
    ing.frames(&Frames::new(0, kv_read(85_000), 1, 1));
    ing.frames(&Frames::new(0, kv_read(refused), 1, 1));
    ing.persist();
    sent.push(85_000);
    sent.sort_unstable();
    assert_eq!(Counters::get(&counters.records_late_stored), 1);
    assert_eq!(Counters::get(&counters.records_late), 1);
    assert_eq!(siblings_of(&reader, id), gens as usize);
    let got = stored_with_late(&reader, id);
    assert!(got.iter().all(|(ts, start)| ts == start), "{got:?}");
    assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), sent);
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
    let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0, Arc::default());
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

/// An acknowledged sender's frame of one KV read at `start_us` (wall-clock
/// time), sequence number `seq`.
fn acked_frame(session: &mut endpoint::session::Session, seq: u64, start_us: u64) -> Frames {
    let mut f = Frames::new(0, kv_read(start_us), 1, 1);
    f.segments = vec![endpoint::Segment {
        records: 1,
        context: Some(session.data(seq, 0).unwrap()),
    }];
    f.last_seq = seq;
    f.acked_sender = Some(5);
    f
}

fn acked_session(next_seq: u64) -> endpoint::session::Session {
    let flags =
        telemetry::wire::control::HELLO_ACKS_WANTED | telemetry::wire::control::HELLO_WALL_CLOCK;
    endpoint::session::Session::new(telemetry::wire::Hello {
        sender_id: 5,
        flags,
        next_seq,
        token: String::new(),
        host: "h".into(),
        agent: "t".into(),
    })
}

/// After a crash an acknowledged sender resends its frames: a resent
/// record the store holds in a late sibling is recognised and stored once;
/// one that came late and was never stored is stored late at its own time,
/// not taken for a resend.
#[test]
fn resent_late_records_are_looked_up_not_assumed_stored() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || IngestConfig {
        timestamps: TimestampMode::Event,
        reorder_window_us: 1_000,
        acks: Some(Arc::new(AckBook::in_memory())),
        ..config()
    };
    let open = || {
        let (writer, reader) = loom::open(dir.path(), loom::Config::default()).unwrap();
        let counters = Arc::new(Counters::default());
        let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0, Arc::default());
        (
            Ingest::new(writer, counters.clone(), cfg(), otlp),
            reader,
            counters,
        )
    };
    let (mut ing, _reader, _) = open();
    let mut session = acked_session(1);
    for (seq, ts) in [(1, 10_000_000), (2, 20_000_000), (3, 5_000_000)] {
        ing.frames(&acked_frame(&mut session, seq, ts));
    }
    ing.flush_reorder();
    ing.persist();
    ing.writer.simulate_crash();

    let (mut ing, reader, counters) = open();
    let mut session = acked_session(2);
    // 20 s and 5 s were stored (5 s late); 4 s came late and was lost.
    for (seq, ts) in [(2, 20_000_000), (3, 5_000_000), (4, 4_000_000)] {
        ing.frames(&acked_frame(&mut session, seq, ts));
    }
    ing.flush_reorder();
    ing.writer.sync();
    let c = |a: &AtomicU64| Counters::get(a);
    assert_eq!(c(&counters.records_duplicate), 2);
    assert_eq!(c(&counters.records_late_stored), 1);
    let snap = reader.snapshot();
    let base = snap
        .schemas()
        .into_iter()
        .map(|(id, _)| id)
        .find(|id| !loom::late_siblings(snap.schemas()).contains_key(id))
        .unwrap();
    let got = stored_with_late(&reader, base);
    assert_eq!(
        got.iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![4_000_000, 5_000_000, 10_000_000, 20_000_000]
    );
    assert!(got.iter().all(|(ts, start)| ts == start), "{got:?}");
}

/// The handlers' own admission (`otlp_ingest::Admission`) against what
/// the ingest thread then decides for the same requests: a request the
/// rule lets a handler answer alone never has a record refused (late or
/// not stored). Requests come in groups handed over together (up to 4
/// ahead of each), newest-first late records push series to the sibling
/// bound, and the run must both answer some alone and refuse some.
#[test]
fn requests_answered_alone_are_never_refused() {
    use crate::otlp_ingest::Admission;
    use loom::{FieldDef, FieldType, SourceSchema};
    let dir = tempfile::tempdir().unwrap();
    let (writer, _reader) = loom::open(dir.path(), loom::Config::default()).unwrap();
    let registry = Arc::new(otlp::Registry::new(16, []));
    let fields = vec![FieldDef {
        name: "v".into(),
        offset: 0,
        ty: FieldType::U64,
    }];
    let ids: Vec<u64> = ["a", "b"]
        .iter()
        .map(|v| {
            let schema = SourceSchema {
                measurement: "m".into(),
                tags: vec![("k".into(), (*v).into())],
                fields: fields.clone(),
                index: None,
            };
            registry
                .admit("m", &[("k", v)], &fields, || schema)
                .unwrap()
        })
        .collect();
    let admission = Arc::new(Admission::default());
    let otlp = OtlpStage::new(registry, 1_000, admission.clone());
    let mut ing = Ingest::new(writer, Arc::new(Counters::default()), config(), otlp);
    // A small deterministic generator (no outside input).
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (mut alone_n, mut late_alone, mut refused_n) = (0, 0, 0);
    let mut now = 1_000_000u64;
    let mut oldest = now;
    for round in 0..400 {
        let group: Vec<Vec<otlp::Shaped>> = (0..1 + next(4))
            .map(|_| {
                (0..1 + next(3))
                    .map(|_| {
                        now += next(300);
                        // From round 100, one in four goes back up to
                        // 50 ms (late, most past the window), and one in
                        // twenty older than every late one so far (a new
                        // sibling each, up to the bound).
                        let ts = match next(20) {
                            0..=4 if round >= 100 => now - next(50_000),
                            5 if round >= 100 => {
                                oldest -= 1 + next(100);
                                oldest
                            }
                            _ => now,
                        };
                        otlp::Shaped {
                            source: ids[next(2) as usize],
                            time_us: ts,
                            bytes: ts.to_le_bytes().to_vec(),
                        }
                    })
                    .collect()
            })
            .collect();
        let mut alone = Vec::new();
        for records in &group {
            let known = admission.all_declared(records);
            admission.sending();
            alone.push(known && admission.never_late());
        }
        for (records, alone) in group.into_iter().zip(alone) {
            let back = records.iter().any(|r| r.time_us + 1_000 < now);
            let (tx, mut rx) = tokio::sync::oneshot::channel();
            ing.otlp(records, Some(tx), None);
            let taken = rx.try_recv().expect("answered");
            let refused = taken.late + taken.not_stored;
            refused_n += refused;
            if alone {
                alone_n += 1;
                late_alone += u64::from(back);
                assert_eq!(refused, 0, "answered alone, then refused");
            }
        }
    }
    assert!(alone_n > 100, "answered alone {alone_n}");
    assert!(
        late_alone > 0,
        "no request with late records answered alone"
    );
    assert!(refused_n > 0, "no request reached the sibling bound");
}
