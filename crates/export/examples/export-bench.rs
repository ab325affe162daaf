//! Export throughput and size: a synthetic store of syscall records
//! (`--records`, 16 sources, the data model's `syscall` schema, 24-byte
//! records, latencies drawn like a real pread64 mix), exported to a local
//! directory on one thread. Prints records/s, Parquet bytes/record beside
//! the store's bytes/record.
//!
//! `cargo run --release -p export --example export-bench -- --records 20000000 --dir /tmp/x`
//! (`--tree DIR`: export there instead of DIR/tree, e.g. one tree for many
//! hosts; `--host NAME`; `--drop-store`: delete the store after export;
//! `--compare N`: N alternated rounds of each Parquet encoding variant
//! exported from the same snapshot into a fresh tree, lines `VARIANT` with
//! the bytes of each measurement; `--from-store DIR --compare N`: the same
//! over an existing store, e.g. a live recording stored by loom-app.)

use std::time::Instant;

use export::{ExportConfig, Exporter, Target};
use loom::{FieldDef, FieldType, IndexDef, RecordBuilder, SourceId, SourceSchema};

fn schema(nr: u32, name: &str) -> SourceSchema {
    let f = |n: &str, o, ty| FieldDef {
        name: n.to_string().into(),
        offset: o,
        ty,
    };
    SourceSchema {
        measurement: "syscall".into(),
        tags: vec![("name".into(), name.into()), ("nr".into(), nr.to_string())],
        fields: vec![
            f("pid", 0, FieldType::U32),
            f("tid", 4, FieldType::U32),
            f("start_us", 8, FieldType::U64),
            f("duration_us", 16, FieldType::U64),
        ],
        index: Some(IndexDef {
            field: "duration_us".into(),
            min: 0,
            interval: 10,
            n_bins: 10_000,
        }),
    }
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn dir_bytes(p: &std::path::Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
        let m = e
            .metadata()
            .map(|m| (m.is_dir(), m.len()))
            .unwrap_or((false, 0));
        n += if m.0 { dir_bytes(&e.path()) } else { m.1 };
    }
    n
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let from_store = arg("--from-store", "");
    if !from_store.is_empty() {
        // An existing store (e.g. a live recording stored by loom-app):
        // only the encoding comparison, read-only.
        let r = loom::open_read_only(std::path::Path::new(&from_store))?;
        let out = std::path::PathBuf::from(arg("--tree", "/tmp/loom-export-bench-tree"));
        let rounds: u32 = arg("--compare", "1").parse()?;
        return compare_encodings(&r.snapshot(), &out, &arg("--host", "bench-1"), rounds);
    }
    let records: u64 = arg("--records", "20000000").parse()?;
    let base = std::path::PathBuf::from(arg("--dir", "/tmp/loom-export-bench"));
    let host = arg("--host", "bench-1");
    let store = base.join("store");
    let out = std::path::PathBuf::from(arg("--tree", &base.join("tree").to_string_lossy()));
    let drop_store = std::env::args().any(|a| a == "--drop-store");
    let _ = std::fs::remove_dir_all(&store);
    let (mut w, r) = loom::open(&store, loom::Config::default())?;
    let names = [
        "read",
        "write",
        "pread64",
        "pwrite64",
        "sendto",
        "recvfrom",
        "futex",
        "epoll_wait",
    ];
    let mut handles = Vec::new();
    for (i, n) in names.iter().enumerate() {
        for k in 0..2u32 {
            let nr = i as u32 * 2 + k;
            handles.push(w.declare(
                SourceId(1000 + u64::from(nr)),
                schema(nr, &format!("{n}{k}")),
            )?);
        }
    }
    let t0 = 1_795_427_940_000_000u64;
    let mut b = RecordBuilder::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let start = Instant::now();
    for i in 0..records {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // 2 M records per second of data time; a long tail of latencies.
        let ts = t0 + i / 2;
        let dur = if x.is_multiple_of(1000) {
            x % 100_000
        } else {
            x % 300
        };
        b.start(24);
        b.u32(0, (x >> 40) as u32 % 64);
        b.u32(4, (x >> 20) as u32 % 512);
        b.u64(8, ts - dur);
        b.u64(16, dur);
        w.push(handles[(i % handles.len() as u64) as usize], ts, b.bytes())?;
    }
    w.persist()?;
    let ingest_s = start.elapsed().as_secs_f64();
    let store_bytes = w.bytes_on_disk();
    let snap = r.durable_snapshot();
    let compare: u32 = arg("--compare", "0").parse()?;
    if compare > 0 {
        compare_encodings(&snap, &out, &host, compare)?;
        w.close()?;
        if drop_store {
            std::fs::remove_dir_all(&store)?;
        }
        return Ok(());
    }
    let target = Target::open(out.to_str().ok_or("utf-8 path")?)?;
    let mut ex = Exporter::open(target, ExportConfig::new(host))?;
    let (start, cpu0) = (Instant::now(), thread_cpu_s());
    let round = ex.export(&snap)?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_s() - cpu0;
    println!(
        "EXPORT records={} files={} seconds={secs:.3} records_per_s={:.0} records_per_cpu_s={:.0} parquet_bytes={} parquet_bytes_per_record={:.2} store_bytes={} store_bytes_per_record={:.2} ingest_s={ingest_s:.2} export_cpu_s={cpu:.2}",
        round.records,
        round.files,
        round.records as f64 / secs,
        round.records as f64 / cpu.max(1e-9),
        round.bytes,
        round.bytes as f64 / round.records.max(1) as f64,
        store_bytes,
        store_bytes as f64 / records.max(1) as f64,
    );
    println!("tree bytes on disk {}", dir_bytes(&out));
    w.close()?;
    if drop_store {
        std::fs::remove_dir_all(&store)?;
    }
    Ok(())
}

/// Exports `snap` `rounds` times with each encoding variant, alternated,
/// into a fresh tree each time; one `VARIANT` line per export.
fn compare_encodings(
    snap: &loom::Snapshot,
    out: &std::path::Path,
    host: &str,
    rounds: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let base = export::file::Encoding::default();
    let variants = [
        ("default", base),
        (
            "dictionary_everywhere",
            export::file::Encoding {
                time_delta: false,
                wide_fields_plain: false,
                ..base
            },
        ),
        (
            "time_delta_only",
            export::file::Encoding {
                wide_fields_plain: false,
                ..base
            },
        ),
        (
            "chunk_stats",
            export::file::Encoding {
                page_statistics: false,
                ..base
            },
        ),
    ];
    for round in 0..rounds {
        for (name, enc) in variants {
            let _ = std::fs::remove_dir_all(out);
            let target = Target::open(out.to_str().ok_or("utf-8 path")?)?;
            let mut cfg = ExportConfig::new(host);
            cfg.encoding = enc;
            let mut ex = Exporter::open(target, cfg)?;
            let cpu0 = thread_cpu_s();
            let r = ex.export(snap)?;
            let cpu = thread_cpu_s() - cpu0;
            let per_measurement: Vec<String> = std::fs::read_dir(out)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let m = name.strip_prefix("measurement=")?.to_string();
                    Some(format!("{m}={}", dir_bytes(&e.path())))
                })
                .collect();
            println!(
                "VARIANT round={round} name={name} records={} records_per_cpu_s={:.0} parquet_bytes_per_record={:.3} bytes {}",
                r.records,
                r.records as f64 / cpu.max(1e-9),
                r.bytes as f64 / r.records.max(1) as f64,
                per_measurement.join(" ")
            );
        }
    }
    Ok(())
}

/// CPU seconds this thread used (the export runs on it alone).
fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}
