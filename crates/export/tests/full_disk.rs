//! A full local disk (a small tmpfs this test mounts): export fails naming
//! the cause, the store keeps everything, and once space returns the next
//! export finishes the batch it was in: every record exactly once.

mod common;

use std::process::Command;

use common::{canonical, read_back, syscall, Feeder};
use export::{ExportConfig, Exporter, Target};

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn mount_tmpfs(dir: &std::path::Path, size: &str, remount: bool) {
    let opts = if remount {
        format!("remount,size={size}")
    } else {
        format!("size={size}")
    };
    let s = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
        .arg(dir)
        .status()
        .expect("run mount (this test mounts a small tmpfs: it needs root)");
    assert!(
        s.success(),
        "mount -t tmpfs -o {opts} {} (needs root)",
        dir.display()
    );
}

#[test]
fn a_full_disk_is_named_and_export_resumes_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut w, r) = loom::open(&dir.path().join("store"), loom::Config::default()).expect("open");
    let mut f = Feeder::new("h");
    for n in 0..64u32 {
        let s = syscall(n, &format!("call{n}"), None);
        for i in 0..5_000u64 {
            // Hours apart per source: many files, spread over partitions.
            f.syscall(
                &mut w,
                100 + u64::from(n),
                &s,
                1_795_427_940_000_000 + u64::from(n) * 3_600_000_000 + i * 997,
                i * 31 + u64::from(n),
            );
        }
    }
    w.persist().expect("persist");
    let stored = f.rows.len();

    let out = dir.path().join("small");
    std::fs::create_dir(&out).expect("mkdir");
    mount_tmpfs(&out, "300k", false);
    let _m = Mount(out.clone());
    let mut cfg = ExportConfig::new("h");
    cfg.max_batch_log_bytes = 1 << 20;
    let target = Target::open(out.to_str().expect("utf-8")).expect("target");
    let mut ex = Exporter::open(target, cfg.clone()).expect("exporter");
    let err = ex
        .export(&r.durable_snapshot())
        .expect_err("300 KiB cannot hold the export");
    assert!(err.to_string().contains("no space left"), "{err}");
    let written = ex.manifest().records_exported;
    assert!(written < stored as u64, "{written}");
    // Nothing stored is lost (sealed chunks and the journaled open ones).
    let snap = r.durable_snapshot();
    let n: u64 = snap
        .sources()
        .iter()
        .map(|&id| snap.count_log(id, 0, u64::MAX) + snap.open_tail_count(id))
        .sum();
    assert_eq!(n, stored as u64);

    mount_tmpfs(&out, "64m", true);
    // A new exporter (as after a restart) reads the manifest and goes on.
    let target = Target::open(out.to_str().expect("utf-8")).expect("target");
    let mut ex = Exporter::open(target, cfg).expect("exporter");
    ex.export(&r.durable_snapshot()).expect("export with space");
    assert_eq!(ex.manifest().records_exported, stored as u64);
    assert_eq!(canonical(read_back(&out)), canonical(f.rows));
    w.close().expect("close");
}
