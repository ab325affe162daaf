//! Runs the built `ingest-scaling` binary for one second per store at 64 B,
//! checks that its last stdout line is a parseable summary with records/s > 0,
//! then reads the kept store back with the store's own API and compares it
//! with what the run says it wrote: the same number of records per writer,
//! each holding the run's payload with its record's value (see
//! `ingest_scaling::values`) and a timestamp inside the run, in write order.

use ingest_scaling::values::Payloads;
use ingest_scaling::{Summary, STAMP_EVERY};
use std::path::Path;
use std::process::Command;

const SIZE: usize = 64;
const DURATION_US: u64 = 1_000_000;

/// Checks the records of one writer as they are read back, in write order:
/// each holds the run's payload and a timestamp inside the run, not before
/// the previous one, changing only where the writer read the clock (every
/// `STAMP_EVERY` records), and the timestamps advance over the run.
struct Expect {
    payloads: Payloads,
    first_ts: Option<u64>,
    last_ts: u64,
    what: String,
}

impl Expect {
    fn new(what: String) -> Self {
        Expect {
            payloads: Payloads::new(SIZE),
            first_ts: None,
            last_ts: 0,
            what,
        }
    }

    fn record(&mut self, k: u64, ts: u64, bytes: &[u8]) {
        let what = &self.what;
        assert_eq!(
            bytes,
            &self.payloads.record(k)[..],
            "{what}: payload of record {k}"
        );
        assert!(
            ts >= self.last_ts && ts < DURATION_US,
            "{what}: record {k} stamped {ts} µs after one stamped {} µs (run lasts {DURATION_US} µs)",
            self.last_ts
        );
        if !k.is_multiple_of(STAMP_EVERY) {
            assert_eq!(
                ts,
                self.last_ts,
                "{what}: record {k} shares its clock read with record {}",
                k - 1
            );
        }
        self.first_ts.get_or_insert(ts);
        self.last_ts = ts;
    }

    fn finish(&self) {
        assert!(
            self.first_ts.is_some_and(|first| self.last_ts > first),
            "{}: timestamps did not advance over the run ({:?} to {})",
            self.what,
            self.first_ts,
            self.last_ts
        );
    }
}

/// `records=` and `per_thread=` of the run's `written:` stderr line.
fn written(stderr: &str) -> (u64, Vec<u64>) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("[ingest-scaling]") && l.contains(" written: "))
        .unwrap_or_else(|| panic!("no written: line in stderr:\n{stderr}"));
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {line:?}"))
            .to_string()
    };
    let total = field("records=").parse().expect("records=");
    let per_thread = field("per_thread=")
        .split(',')
        .map(|n| n.parse().expect("per_thread="))
        .collect();
    (total, per_thread)
}

fn check_loom(dir: &Path, written: &[u64]) {
    let (mut w, r) = loom::open(&dir.join("loom"), loom::Config::default()).expect("open loom");
    let id = ingest_scaling::sink::loom::SOURCE;
    w.declare_source(id, None).expect("declare");
    assert_eq!(r.sources(), vec![id]);
    assert_eq!(r.snapshot().record_count(id), written[0], "loom records");
    let mut expect = Expect::new("loom".into());
    let mut k = 0;
    r.scan(id, 0, u64::MAX, |ts, bytes| {
        expect.record(k, ts, bytes);
        k += 1;
    })
    .expect("scan loom");
    assert_eq!(k, written[0], "loom records scanned");
    expect.finish();
    w.close().expect("close loom");
}

fn check_lmdb(dir: &Path, written: &[u64]) {
    let options = heed::EnvOpenOptions::new()
        .map_size(1 << 30)
        .max_dbs(1)
        .clone();
    // SAFETY: no other process has this environment open: the run is over.
    let env = unsafe { options.open(dir.join("lmdb")) }.expect("open lmdb");
    let txn = env.read_txn().expect("read txn");
    let db: heed::Database<heed::types::Bytes, heed::types::Bytes> = env
        .open_database(&txn, Some("records"))
        .expect("open records")
        .expect("records database exists");
    assert_eq!(db.len(&txn).expect("len"), written[0], "lmdb records");
    let mut expect = Expect::new("lmdb".into());
    for (k, entry) in db.iter(&txn).expect("iter").enumerate() {
        let (key, value) = entry.expect("lmdb entry");
        assert_eq!(key, (k as u64).to_be_bytes(), "lmdb key of record {k}");
        let (ts, bytes) = value.split_at(8);
        let ts = u64::from_be_bytes(ts.try_into().expect("8 bytes"));
        expect.record(k as u64, ts, bytes);
    }
    expect.finish();
}

fn check_rocksdb(dir: &Path, written: &[u64]) {
    use ingest_scaling::sink::rocksdb::THREAD_BITS;
    let db =
        rocksdb::DB::open_for_read_only(&rocksdb::Options::default(), dir.join("rocksdb"), false)
            .expect("open rocksdb");
    let mut expect: Vec<Expect> = (0..written.len())
        .map(|t| Expect::new(format!("rocksdb thread {t}")))
        .collect();
    let mut seen = vec![0u64; written.len()];
    for entry in db.iterator(rocksdb::IteratorMode::Start) {
        let (key, value) = entry.expect("rocksdb entry");
        let key = u64::from_be_bytes(key[..].try_into().expect("8-byte key"));
        let t = (key >> (64 - THREAD_BITS)) as usize;
        let seq = key & ((1 << (64 - THREAD_BITS)) - 1);
        assert!(t < written.len(), "key {key:#x} of writer {t}");
        assert_eq!(
            seq, seen[t],
            "rocksdb thread {t}: keys are not 0, 1, 2, ..."
        );
        let (ts, bytes) = value.split_at(8);
        let ts = u64::from_be_bytes(ts.try_into().expect("8 bytes"));
        expect[t].record(seq, ts, bytes);
        seen[t] += 1;
    }
    assert_eq!(seen, written, "rocksdb records per writer");
    expect.iter().for_each(Expect::finish);
}

fn check_file(dir: &Path, written: &[u64]) {
    for (t, &n) in written.iter().enumerate() {
        let bytes = std::fs::read(dir.join(format!("records-{t}.bin"))).expect("record file");
        let mut expect = Expect::new(format!("file thread {t}"));
        let record_len = 12 + SIZE;
        assert_eq!(bytes.len() as u64, n * record_len as u64, "file {t}: bytes");
        for (k, r) in bytes.chunks_exact(record_len).enumerate() {
            let ts = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
            let len = u32::from_le_bytes(r[8..12].try_into().expect("4 bytes"));
            assert_eq!(len as usize, SIZE, "file {t}: length of record {k}");
            expect.record(k as u64, ts, &r[12..]);
        }
        expect.finish();
    }
}

fn smoke(db: &str, extra: &[&str], want_label: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = dir.path().join("data");
    let output = Command::new(env!("CARGO_BIN_EXE_ingest-scaling"))
        .args(["--db", db, "--data-size", "64", "--duration-s", "1"])
        .args(extra)
        .arg("--keep-data")
        .arg("--storage-dir")
        .arg(&storage)
        .output()
        .expect("running ingest-scaling");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{db}: exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{db}: want exactly one stdout line, got {stdout:?}"
    );
    let summary = Summary::parse(lines[0])
        .unwrap_or_else(|| panic!("{db}: unparseable summary line {:?}", lines[0]));
    assert_eq!(summary.db, want_label);
    assert_eq!(summary.size, SIZE);
    assert!(
        summary.records_per_s > 0.0,
        "{db}: no records written: {stdout}"
    );
    assert!(summary.mb_per_s > 0.0, "{db}: no bytes written: {stdout}");
    let threads: usize = match extra {
        ["--threads", t] => t.parse().expect("thread count"),
        _ => 1,
    };
    assert_eq!(summary.threads, threads);

    let (total, per_thread) = written(&stderr);
    assert_eq!(per_thread.len(), threads, "{db}: writers");
    assert_eq!(per_thread.iter().sum::<u64>(), total);
    assert!(per_thread.iter().all(|&n| n > 0), "{db}: {per_thread:?}");
    match db {
        "loom" => check_loom(&storage, &per_thread),
        "lmdb" => check_lmdb(&storage, &per_thread),
        "rocksdb" => check_rocksdb(&storage, &per_thread),
        "file" => check_file(&storage, &per_thread),
        _ => panic!("no read-back check for {db}"),
    }
}

#[test]
fn loom_runs() {
    smoke("loom", &[], "loom");
}

#[test]
fn loom_with_index_runs() {
    smoke("loom", &["--index"], "loom-index");
}

#[test]
fn lmdb_runs() {
    smoke("lmdb", &[], "lmdb");
}

#[test]
fn rocksdb_runs() {
    smoke("rocksdb", &["--threads", "2"], "rocksdb");
}

#[test]
fn file_runs() {
    smoke("file", &["--threads", "2"], "file");
}

/// Without `--keep-data` the data is deleted after the run; only the
/// marked, empty directory remains.
#[test]
fn deletes_its_data_after_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = dir.path().join("data");
    let output = Command::new(env!("CARGO_BIN_EXE_ingest-scaling"))
        .args(["--db", "file", "--data-size", "8", "--duration-s", "1"])
        .arg("--storage-dir")
        .arg(&storage)
        .output()
        .expect("running ingest-scaling");
    assert!(output.status.success(), "{output:?}");
    let left: Vec<_> = std::fs::read_dir(&storage)
        .expect("storage dir kept")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from(".ingest-scaling")]);
}

#[test]
fn rejects_threads_for_lmdb() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_ingest-scaling"))
        .args(["--db", "lmdb", "--data-size", "8", "--threads", "2"])
        .arg("--storage-dir")
        .arg(dir.path().join("data"))
        .output()
        .expect("running ingest-scaling");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
}
