//! The syscall-latency probe really loads and measures `pread64`.
//!
//! Runs as root (CI does). A child process (this test binary re-executed on
//! the `pread_child` test, a no-op unless started by the parent) makes `FAST + SLOW` `pread64` calls on one
//! thread. The slow ones are slow inside the syscall itself: they read into a
//! page registered with userfaultfd, so the kernel's copy to user space faults
//! and waits until a handler thread of the child resolves the fault after
//! `SLOW_DELAY`. (pread64 on pipes, sockets or eventfds fails at once with
//! ESPIPE, and disk reads are too fast and too variable to rank reliably.)

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use probes::{ProbeConfig, ProbeEvent, ProbeHandle, SYS_PREAD64};

const FAST: usize = 200;
/// Positions (in call order) of the slow calls.
const SLOW_AT: [usize; 5] = [20, 60, 100, 140, 180];
const SLOW_DELAY: Duration = Duration::from_millis(20);
const CHILD_ENV: &str = "LOOM_PROBES_PREAD_CHILD";
const PAGE: usize = 4096;

// userfaultfd ABI (linux/userfaultfd.h); ioctl numbers are _IOWR(0xAA, nr, size).
const UFFD_API: u64 = 0xAA;
const UFFDIO_API: u64 = 0xC018_AA3F;
const UFFDIO_REGISTER: u64 = 0xC020_AA00;
const UFFDIO_COPY: u64 = 0xC028_AA03;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;

fn total_calls() -> usize {
    FAST + SLOW_AT.len()
}

#[test]
fn pread64_latencies_rank_slow_calls_first_and_only_the_target_is_traced() {
    let exe = std::env::current_exe().expect("test binary path");
    let mut child = Command::new(exe)
        .args(["--exact", "pread_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let child_pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().expect("child stdout")).lines();
    let worker_tid: u32 = loop {
        let line = lines
            .next()
            .expect("child exited before READY")
            .expect("read child");
        // libtest may print "test pread_child ... " on the same line first.
        if let Some((_, rest)) = line.split_once("READY ") {
            break rest.trim().parse().expect("tid");
        }
    };

    let (tx, rx) = crossbeam_channel::bounded(1 << 16);
    let config = ProbeConfig {
        syscalls: true,
        page_cache: false,
        target_tgid: Some(child_pid),
        ..ProbeConfig::default()
    };
    let probes = ProbeHandle::start(config, tx).unwrap_or_else(|e| panic!("probes: {e}"));

    // Go.
    let mut stdin = child.stdin.take().expect("child stdin");
    stdin.write_all(b"go\n").expect("signal child");
    drop(stdin);
    let status = child.wait().expect("wait child");
    assert!(status.success(), "child failed: {status}");
    std::thread::sleep(Duration::from_millis(50));
    let stats = probes.stop().expect("stop probes");

    let mut events = Vec::new();
    for batch in rx.try_iter() {
        for e in batch {
            if let ProbeEvent::Syscall(s) = e {
                events.push(s);
            }
        }
    }
    assert_eq!(stats.kernel_drops(), 0, "{stats:?}");
    assert_eq!(stats.channel_drops, 0, "{stats:?}");
    assert!(!events.is_empty(), "no syscall events: {stats:?}");
    let strangers: Vec<_> = events.iter().filter(|e| e.pid != child_pid).collect();
    assert!(
        strangers.is_empty(),
        "events of other processes: {:?}",
        &strangers[..strangers.len().min(5)]
    );

    let mut preads: Vec<_> = events
        .iter()
        .filter(|e| e.nr == SYS_PREAD64 && e.tid == worker_tid)
        .copied()
        .collect();
    assert!(
        preads.len() >= total_calls(),
        "only {} pread64 events of {}",
        preads.len(),
        total_calls()
    );
    preads.sort_by_key(|e| e.start_ns);
    // Our calls are the last ones the worker made.
    let ours = &preads[preads.len() - total_calls()..];
    let mut by_duration: Vec<usize> = (0..ours.len()).collect();
    by_duration.sort_by_key(|&i| std::cmp::Reverse(ours[i].duration_ns));
    let mut slowest: Vec<usize> = by_duration[..SLOW_AT.len()].to_vec();
    slowest.sort_unstable();
    assert_eq!(slowest, SLOW_AT, "slowest calls are not the slow ones");
    for &i in &SLOW_AT {
        assert!(
            ours[i].duration_ns >= SLOW_DELAY.as_nanos() as u64 * 3 / 4,
            "slow call {i} took only {} ns",
            ours[i].duration_ns
        );
    }
}

/// Body of the child process; does nothing unless started by the test above.
#[test]
fn pread_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let mut file = tempfile::tempfile().expect("temp file");
    file.write_all(&vec![7u8; PAGE]).expect("fill file");
    let fd = file.as_raw_fd();
    let uffd = SlowPages::new(SLOW_AT.len());

    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let mut out = std::io::stdout();
    writeln!(out, "READY {tid}").expect("stdout");
    out.flush().expect("stdout");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("wait for go");

    let mut buf = vec![0u8; PAGE];
    let mut slow = 0;
    for i in 0..total_calls() {
        let dst = if SLOW_AT.contains(&i) {
            slow += 1;
            uffd.page(slow - 1)
        } else {
            buf.as_mut_ptr()
        };
        // SAFETY: dst points to PAGE writable bytes (a heap buffer or a page of
        // the registered mapping, which the handler fills on fault).
        let n = unsafe { libc::pread64(fd, dst.cast(), PAGE, 0) };
        assert_eq!(
            n,
            PAGE as isize,
            "pread64 {i}: {}",
            std::io::Error::last_os_error()
        );
    }
    uffd.join();
}

/// Anonymous pages registered with userfaultfd; the first touch of each page
/// (here: the kernel copying pread64's data) blocks for `SLOW_DELAY`.
struct SlowPages {
    base: *mut u8,
    handler: std::thread::JoinHandle<()>,
}

impl SlowPages {
    fn new(pages: usize) -> SlowPages {
        let started = Instant::now();
        // SAFETY: plain syscalls with valid arguments; results are checked.
        unsafe {
            let uffd = libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) as i32;
            assert!(
                uffd >= 0,
                "userfaultfd: {} (needs root or vm.unprivileged_userfaultfd=1)",
                std::io::Error::last_os_error()
            );
            let mut api = [UFFD_API, 0, 0];
            assert_eq!(
                libc::ioctl(uffd, UFFDIO_API as _, api.as_mut_ptr()),
                0,
                "UFFDIO_API"
            );
            let len = pages * PAGE;
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(base, libc::MAP_FAILED, "mmap");
            let mut reg = [base as u64, len as u64, UFFDIO_REGISTER_MODE_MISSING, 0];
            assert_eq!(
                libc::ioctl(uffd, UFFDIO_REGISTER as _, reg.as_mut_ptr()),
                0,
                "UFFDIO_REGISTER: {}",
                std::io::Error::last_os_error()
            );
            let handler = std::thread::spawn(move || {
                let source = vec![1u8; PAGE];
                for _ in 0..pages {
                    let mut msg = [0u8; 32];
                    let n = libc::read(uffd, msg.as_mut_ptr().cast(), msg.len());
                    assert_eq!(n, 32, "read uffd: {}", std::io::Error::last_os_error());
                    assert_eq!(msg[0], UFFD_EVENT_PAGEFAULT);
                    let addr = u64::from_ne_bytes(msg[16..24].try_into().expect("8 bytes"));
                    std::thread::sleep(SLOW_DELAY);
                    let mut copy = [
                        addr & !(PAGE as u64 - 1),
                        source.as_ptr() as u64,
                        PAGE as u64,
                        0,
                        0,
                    ];
                    assert_eq!(
                        libc::ioctl(uffd, UFFDIO_COPY as _, copy.as_mut_ptr()),
                        0,
                        "UFFDIO_COPY"
                    );
                }
                let _ = started;
            });
            SlowPages {
                base: base.cast(),
                handler,
            }
        }
    }

    fn page(&self, i: usize) -> *mut u8 {
        // SAFETY: i < pages, inside the mapping.
        unsafe { self.base.add(i * PAGE) }
    }

    fn join(self) {
        self.handler.join().expect("uffd handler");
    }
}
