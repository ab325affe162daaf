//! The intake log against its own files: durability, read-back, recycling.

use super::entry::{read_file, End, RawRequest, HEADER, MAGIC, MAGIC_RAW, MAGIC_V1};
use super::files::{file_name, file_numbers, numbered};
use super::*;
use std::time::Duration;

/// The records of what was read back, with their files (raw requests
/// left out).
fn flat(left: &[(FileNo, Logged)]) -> Vec<(FileNo, Shaped)> {
    let mut out = Vec::new();
    for (f, l) in left {
        if let Logged::Records(rs) = l {
            out.extend(rs.iter().map(|r| (*f, r.clone())));
        }
    }
    out
}

fn rec(source: u64, time_us: u64, n: usize) -> Shaped {
    Shaped {
        source,
        time_us,
        bytes: (0..n)
            .map(|i| (i as u8).wrapping_add(time_us as u8))
            .collect(),
    }
}

/// Commits become durable in order, survive a reopen with a torn tail,
/// and files are deleted only when told.
#[test]
fn commits_are_durable_read_back_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let mark = Arc::new(DurableMark::new());
    let (mut log, left) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
    assert!(left.is_empty());
    let a = [rec(1, 10, 5), rec(2, 11, 0)];
    let (f1, p1) = log.append(&a);
    let (f2, p2) = log.append(&[rec(1, 12, 300)]);
    assert_eq!((f1, p1, f2, p2), (1, 1, 1, 2));
    assert_eq!(mark.wait_blocking(2, Duration::from_secs(10)), Ok(()));
    drop(log);

    // A torn entry at the end (a crash mid-write) is cut off.
    let path = file_name(dir.path(), 1);
    let mut bytes = std::fs::read(&path).unwrap();
    let good = bytes.len();
    bytes.extend_from_slice(&MAGIC.to_le_bytes());
    bytes.extend_from_slice(&[9, 9, 9]);
    std::fs::write(&path, &bytes).unwrap();
    let mark = Arc::new(DurableMark::new());
    let (mut log, left) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
    let got: Vec<(u64, u64, u64, Vec<u8>)> = flat(&left)
        .iter()
        .map(|(f, r)| (*f, r.source, r.time_us, r.bytes.clone()))
        .collect();
    let want: Vec<(u64, u64, u64, Vec<u8>)> = a
        .iter()
        .chain(&[rec(1, 12, 300)])
        .map(|r| (1, r.source, r.time_us, r.bytes.clone()))
        .collect();
    assert_eq!(got, want);
    assert!(bytes.len() > good);

    // New commits go to a new file; file 1 stays until its records are
    // pushed and deleted.
    log.replayed(1, 3);
    let (f, p) = log.append(&[rec(3, 20, 1)]);
    assert_eq!((f, p), (2, 1));
    assert_eq!(log.stored_files(), Vec::<FileNo>::new());
    log.pushed(1, 3);
    assert_eq!(log.stored_files(), vec![1]);
    log.delete(vec![1]);
    log.pushed(2, 1);
    assert_eq!(mark.wait_blocking(1, Duration::from_secs(10)), Ok(()));
    // The open file is closed for deletion once complete.
    assert_eq!(log.stored_files(), vec![2]);
    log.delete(vec![2]);
    drop(log);
    assert!(file_numbers(dir.path()).unwrap().is_empty());
}

/// A done file is recycled: the next file reuses it, and after a
/// restart only the entries of its new life are read back, not the
/// earlier ones still on disk after them.
#[test]
fn recycled_files_keep_only_their_new_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mark = Arc::new(DurableMark::new());
    let (mut log, _) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
    // Fill file 1 past its size with 1 MiB records, one commit each.
    let mut n1 = 0;
    let mut last = 0;
    while log.current_file() == 1 {
        let (f, p) = log.append(&[rec(7, 100 + n1, 1 << 20)]);
        assert_eq!(f, 1);
        n1 += 1;
        last = p;
    }
    assert_eq!(mark.wait_blocking(last, Duration::from_secs(30)), Ok(()));
    log.pushed(1, n1);
    assert_eq!(log.stored_files(), vec![1]);
    log.delete(vec![1]);
    drop(log);
    assert_eq!(numbered(dir.path(), "spare-").unwrap(), vec![1]);
    assert!(file_numbers(dir.path()).unwrap().is_empty());

    // The next file takes the spare: one small entry over 32 MiB of old ones.
    let mark = Arc::new(DurableMark::new());
    let (mut log, left) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
    assert!(left.is_empty());
    let (f, p) = log.append(&[rec(8, 5, 3)]);
    assert_eq!(f, 2, "numbers continue past the spare's");
    assert_eq!(mark.wait_blocking(p, Duration::from_secs(10)), Ok(()));
    drop(log);
    assert!(numbered(dir.path(), "spare-").unwrap().is_empty());
    let len = std::fs::metadata(file_name(dir.path(), 2)).unwrap().len();
    assert!(
        len >= FILE_BYTES,
        "the recycled file keeps its blocks: {len}"
    );

    let (_log, left) = IntakeLog::open(dir.path(), Arc::new(DurableMark::new())).unwrap();
    let got: Vec<(u64, u64, u64, Vec<u8>)> = flat(&left)
        .iter()
        .map(|(f, r)| (*f, r.source, r.time_us, r.bytes.clone()))
        .collect();
    assert_eq!(got, vec![(2, 8, 5, rec(8, 5, 3).bytes)]);
}

/// Entries of the first format (no file number) are still read.
#[test]
fn first_format_entries_are_read() {
    let payload = {
        let r = rec(3, 9, 4);
        let mut p = Vec::new();
        p.extend_from_slice(&r.source.to_le_bytes());
        p.extend_from_slice(&r.time_us.to_le_bytes());
        p.extend_from_slice(&(r.bytes.len() as u32).to_le_bytes());
        p.extend_from_slice(&r.bytes);
        p
    };
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&MAGIC_V1.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    let mut out = Vec::new();
    assert_eq!(read_file(&bytes, 12, &mut out), End::Clean);
    let recs = flat(&out.into_iter().map(|l| (12, l)).collect::<Vec<_>>());
    assert_eq!(recs.len(), 1);
    assert_eq!((recs[0].1.source, recs[0].1.time_us), (3, 9));
    let mut out = Vec::new();
    // A flipped payload byte is a torn entry, not a record.
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert_eq!(read_file(&bytes, 12, &mut out), End::Torn);
    assert!(out.is_empty());
}

/// Once the log is in use, a new file starts as a blank file made ahead
/// (its blocks written, so syncs flush data only); its zeros read as the
/// end of the file.
#[test]
fn new_files_start_blank() {
    let dir = tempfile::tempdir().unwrap();
    let mark = Arc::new(DurableMark::new());
    let (mut log, _) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        numbered(dir.path(), "blank-").unwrap().is_empty(),
        "blank files made before the log was used"
    );
    let (f1, p) = log.append(&[rec(4, 39, 1)]);
    assert_eq!(mark.wait_blocking(p, Duration::from_secs(10)), Ok(()));
    log.pushed(f1, 1);
    assert_eq!(log.stored_files(), vec![f1]);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while numbered(dir.path(), "blank-").unwrap().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no blank files made");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (f, p) = log.append(&[rec(4, 40, 10), rec(4, 41, 0)]);
    assert_eq!(f, f1 + 1);
    assert_eq!(mark.wait_blocking(p, Duration::from_secs(10)), Ok(()));
    drop(log);
    let len = std::fs::metadata(file_name(dir.path(), f)).unwrap().len();
    assert!(
        len > FILE_BYTES,
        "file {f} was not a blank one: {len} bytes"
    );
    let (_log, left) = IntakeLog::open(dir.path(), Arc::new(DurableMark::new())).unwrap();
    let got: Vec<(u64, u64)> = flat(&left)
        .iter()
        .map(|(_, r)| (r.source, r.time_us))
        .collect();
    assert_eq!(got, vec![(4, 39), (4, 40), (4, 41)]);
}

/// Raw requests logged by the handlers' path are read back as written,
/// in order with records entries, up to a torn tail; a file is held back
/// while a request logged in it is not handed over or converted.
#[test]
fn raw_requests_are_read_back_after_a_torn_tail() {
    use otlp::{Encoding, Signal};
    let dir = tempfile::tempdir().unwrap();
    let mark = Arc::new(DurableMark::new());
    let (mut log, _) = IntakeLog::open(dir.path(), mark.clone()).unwrap();
    let raw = log.raw();
    let want = vec![
        Logged::Request(RawRequest {
            signal: Signal::Traces,
            encoding: Encoding::Protobuf,
            arrival_us: 1_700_000_000_000_001,
            body: (0..5000u32).map(|i| (i * 7) as u8).collect(),
        }),
        Logged::Records(vec![rec(9, 30, 12)]),
        Logged::Request(RawRequest {
            signal: Signal::Logs,
            encoding: Encoding::Json,
            arrival_us: 42,
            body: b"{\"resourceLogs\":[]}".to_vec(),
        }),
        Logged::Request(RawRequest {
            signal: Signal::Metrics,
            encoding: Encoding::Protobuf,
            arrival_us: 43,
            body: Vec::new(),
        }),
    ];
    let mut held = Vec::new();
    let mut last = 0;
    for l in &want {
        match l {
            Logged::Request(r) => {
                let res = raw.log_request(r.signal, r.encoding, r.arrival_us, &r.body);
                last = res.position;
                held.push(res);
            }
            Logged::Records(rs) => last = log.append(rs).1,
        }
    }
    assert_eq!(last, 4);
    assert_eq!(mark.wait_blocking(last, Duration::from_secs(10)), Ok(()));
    // File 1 holds three requests and one record: not done until each
    // request is handed over and converted (or given up) and the record
    // pushed.
    log.pushed(1, 1);
    assert_eq!(log.stored_files(), Vec::<FileNo>::new());
    let first = held.remove(0);
    first.handed();
    log.taken(1, 2);
    drop(held);
    assert_eq!(log.stored_files(), Vec::<FileNo>::new());
    log.pushed(1, 2);
    assert_eq!(log.stored_files(), vec![1]);
    drop(log);

    // A torn raw entry at the end: its header claims more than is there.
    let path = file_name(dir.path(), 1);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&MAGIC_RAW.to_le_bytes());
    bytes.extend_from_slice(&1000u32.to_le_bytes());
    bytes.extend_from_slice(&[0; 12]);
    bytes.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0]);
    std::fs::write(&path, &bytes).unwrap();
    let (_log, left) = IntakeLog::open(dir.path(), Arc::new(DurableMark::new())).unwrap();
    let got: Vec<Logged> = left
        .into_iter()
        .map(|(f, l)| {
            assert_eq!(f, 1);
            l
        })
        .collect();
    assert_eq!(got, want);

    // A raw entry whose CRC holds but whose signal is unknown is not
    // taken for a request.
    let mut e = super::entry::raw_entry(Signal::Traces, Encoding::Protobuf, 1, b"x");
    e[HEADER] = 9;
    super::entry::seal(&mut e, MAGIC_RAW, 5);
    let mut out = Vec::new();
    assert_eq!(read_file(&e, 5, &mut out), End::Torn);
    assert!(out.is_empty());
}
