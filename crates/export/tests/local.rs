//! Export to a local directory: every durable record lands once, typed and
//! sorted, in the hive layout; later exports add only what is new (also
//! records stored late, with older times); bad targets are refused by
//! cause.

mod common;

use common::{canonical, log_schema, parquet_files, read_back, syscall, Feeder};
use export::{ExportConfig, Exporter, Target};
use loom::Config;

/// 2026-11-23 09:59:00 UTC in µs: records cross into hour 10.
const T0: u64 = 1_795_427_940_000_000;

fn small_chunks() -> Config {
    Config {
        chunk_size: 4096,
        ..Config::default()
    }
}

fn export_all(store: &loom::Reader, to: &str, host: &str) -> export::Round {
    let target = Target::open(to).expect("target");
    let mut cfg = ExportConfig::new(host);
    cfg.max_batch_log_bytes = 64 << 10; // several batches
    let mut ex = Exporter::open(target, cfg).expect("exporter");
    ex.export(&store.durable_snapshot()).expect("export")
}

#[test]
fn every_durable_record_is_exported_once_typed_sorted_and_partitioned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let (mut w, r) = loom::open(&dir.path().join("store"), small_chunks()).expect("open");
    let mut f = Feeder::new("db-1");
    let (read, write) = (syscall(0, "read", None), syscall(17, "pread64", None));
    let other = syscall(17, "pread64", Some("db-9"));
    let logs = log_schema("api");
    for i in 0..30_000u64 {
        let ts = T0 + i * 4_000; // 120 s: crosses 10:00
        f.syscall(&mut w, 1, &read, ts, i);
        if i % 3 == 0 {
            f.syscall(&mut w, 2, &write, ts, i + 1);
        }
        if i % 5 == 0 {
            f.syscall(&mut w, 3, &other, ts, i + 2);
        }
        if i % 7 == 0 {
            f.log(&mut w, 4, &logs, ts, i);
        }
    }
    w.persist().expect("persist");
    // Pushed after the persist: visible, not durable, not exported.
    f.syscall(&mut w, 1, &read, T0 + 200_000_000, 1);
    w.sync();
    let not_durable = f.rows.pop().expect("row");

    let round = export_all(&r, out.to_str().expect("utf-8"), "db-1");
    assert_eq!(round.records, f.rows.len() as u64);
    assert!(round.batches > 1, "{round:?}");
    let got = read_back(&out);
    assert_eq!(got.len(), f.rows.len());
    assert_eq!(canonical(got), canonical(f.rows.clone()));

    // Hive layout: measurement, host (the series' own tag wins), UTC date and hour.
    let files = parquet_files(&out);
    let rel: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(&out)
                .expect("rel")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for part in [
        "measurement=syscall/host=db-1/date=2026-11-23/hour=09/",
        "measurement=syscall/host=db-1/date=2026-11-23/hour=10/",
        "measurement=syscall/host=db-9/date=2026-11-23/hour=10/",
        "measurement=log/host=db-1/date=2026-11-23/hour=09/",
    ] {
        assert!(
            rel.iter().any(|p| p.starts_with(part)),
            "{part} missing in {rel:?}"
        );
    }
    assert_typed_with_statistics(&files);

    // A second export finds nothing new; after more records (one source
    // stored late, with older times than the newest exported) only those.
    assert_eq!(
        export_all(&r, out.to_str().expect("utf-8"), "db-1").records,
        0
    );
    w.persist().expect("persist");
    f.rows.push(not_durable);
    for i in 0..500u64 {
        f.syscall(&mut w, 5, &syscall(1, "write", None), T0 + i, i);
    }
    w.persist().expect("persist");
    let round = export_all(&r, &format!("file://{}", out.display()), "db-1");
    assert_eq!(round.records, 501);
    assert_eq!(canonical(read_back(&out)), canonical(f.rows.clone()));
    w.close().expect("close");

    // A store opened read-only (as `loom export` does) exports the same.
    let out2 = dir.path().join("out2");
    let ro = loom::open_read_only(&dir.path().join("store")).expect("ro");
    export_all(&ro, out2.to_str().expect("utf-8"), "db-1");
    assert_eq!(canonical(read_back(&out2)), canonical(f.rows));
}

#[test]
fn bad_targets_are_refused_with_their_cause() {
    let err = |url: &str| match Target::open(url) {
        Ok(_) => panic!("{url} accepted"),
        Err(e) => e.to_string(),
    };
    assert!(err("ftp://host/x").contains("unknown scheme \"ftp\""));
    assert!(err("s3://").contains("no bucket name"));
    assert!(err("file://relative/dir").contains("absolute path"));
    let e = err("/proc/definitely/not/here");
    assert!(e.contains("creating directory"), "{e}");
}

/// Typed columns, tags as dictionaries, time as UTC µs, statistics kept,
/// zstd: checked on the first syscall file.
fn assert_typed_with_statistics(files: &[std::path::PathBuf]) {
    let f0 = std::fs::File::open(
        files
            .iter()
            .find(|p| p.to_string_lossy().contains("measurement=syscall"))
            .expect("a syscall file"),
    )
    .expect("open");
    let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f0)
        .expect("parquet");
    let schema = b.schema().clone();
    use arrow_schema::{DataType, TimeUnit};
    assert_eq!(
        schema.field_with_name("time").expect("time").data_type(),
        &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    );
    assert!(matches!(
        schema.field_with_name("name").expect("name").data_type(),
        DataType::Dictionary(..)
    ));
    assert_eq!(
        schema
            .field_with_name("duration_us")
            .expect("d")
            .data_type(),
        &DataType::UInt64
    );
    assert_eq!(
        schema.field_with_name("pid").expect("pid").data_type(),
        &DataType::UInt32
    );
    assert!(
        schema.field_with_name("host").is_err(),
        "host is the partition column"
    );
    let md = b.metadata();
    let rg = md.row_group(0);
    let time_col = rg
        .columns()
        .iter()
        .find(|c| c.column_path().string() == "time")
        .expect("time chunk");
    assert!(
        time_col
            .statistics()
            .is_some_and(|s| s.min_bytes_opt().is_some()),
        "row-group statistics"
    );
    assert_eq!(
        format!("{:?}", time_col.compression()).split('(').next(),
        Some("ZSTD")
    );
}
