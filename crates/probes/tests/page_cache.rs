//! The page-cache probe really loads and sees a file's pages come back into
//! the page cache after they were evicted with `posix_fadvise(DONTNEED)`.
//! Runs as root (CI does). The file lives under the target directory, on a
//! disk file system (tmpfs pages do not go through this tracepoint).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use probes::{ProbeConfig, ProbeEvent, ProbeHandle};

const FILE_BYTES: usize = 2 * 1024 * 1024;
const PAGE: u64 = 4096;

#[test]
fn reading_an_evicted_file_yields_page_cache_events_for_its_inode() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let path = dir.path().join("evicted.dat");
    let mut f = File::create(&path).expect("create");
    f.write_all(&vec![0x5au8; FILE_BYTES]).expect("write");
    f.sync_all().expect("fsync");
    drop(f);
    let meta = std::fs::metadata(&path).expect("stat");

    let f = File::open(&path).expect("open");
    // SAFETY: valid fd; offset 0 and length 0 mean the whole file.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise");

    let (tx, rx) = crossbeam_channel::bounded(1 << 16);
    let config = ProbeConfig {
        syscalls: false,
        page_cache: true,
        target_tgid: Some(std::process::id()),
        ..ProbeConfig::default()
    };
    let probes = ProbeHandle::start(config, tx).unwrap_or_else(|e| panic!("probes: {e}"));
    let mut data = Vec::new();
    (&f).read_to_end(&mut data).expect("read");
    assert_eq!(data.len(), FILE_BYTES);
    std::thread::sleep(Duration::from_millis(50));
    let stats = probes.stop().expect("stop");

    let events: Vec<_> = rx
        .try_iter()
        .flatten()
        .filter_map(|e| match e {
            ProbeEvent::PageCache(p) => Some(p),
            ProbeEvent::Syscall(_) | ProbeEvent::Packet(_) => None,
        })
        .collect();
    assert_eq!(stats.kernel_drops(), 0, "{stats:?}");
    assert!(
        events.iter().all(|e| e.pid == std::process::id()),
        "events of other processes"
    );
    let ours: Vec<_> = events.iter().filter(|e| e.inode == meta.ino()).collect();
    assert!(
        !ours.is_empty(),
        "no page-cache event for inode {} among {} events",
        meta.ino(),
        events.len()
    );
    let (major, minor) = ours[0].device_major_minor();
    assert_eq!(
        (major, minor),
        (libc::major(meta.dev()), libc::minor(meta.dev())),
        "device"
    );
    // Every page of the file came back (a concurrent drop_caches could make a
    // page come back twice, so coverage is checked rather than an exact sum).
    let mut covered = vec![false; FILE_BYTES / PAGE as usize];
    for e in &ours {
        for i in e.index..e.index + (1u64 << e.order) {
            if let Some(c) = covered.get_mut(i as usize) {
                *c = true;
            }
        }
    }
    let missing = covered.iter().filter(|c| !**c).count();
    assert_eq!(missing, 0, "pages never inserted; events: {ours:?}");
    assert!(ours.iter().all(|e| e.pfn != 0));
}
