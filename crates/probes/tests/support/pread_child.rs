//! Child process of `tests/syscall_latency.rs`: prints `READY <tid>`, waits
//! for a line on stdin, then makes `total_calls()` `pread64` calls on that
//! thread; those at `SLOW_AT` read into a page registered with userfaultfd, so
//! the kernel's copy to user space faults and waits until a handler thread
//! resolves the fault after `SLOW_DELAY`. Exits non-zero (panics) if any call
//! fails.
//!
//! A test-support binary, not a tool: the test finds it through
//! `CARGO_BIN_EXE_probes-pread-child`.

#[path = "pread_plan.rs"]
mod pread_plan;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use pread_plan::{total_calls, PAGE, SLOW_AT, SLOW_DELAY};

// userfaultfd ABI (linux/userfaultfd.h); ioctl numbers are _IOWR(0xAA, nr, size).
const UFFD_API: u64 = 0xAA;
const UFFDIO_API: u64 = 0xC018_AA3F;
const UFFDIO_REGISTER: u64 = 0xC020_AA00;
const UFFDIO_COPY: u64 = 0xC028_AA03;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;

/// A regular file with no name in the temp directory: gone when closed.
fn unnamed_temp_file() -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(std::env::temp_dir())
}

fn main() {
    let mut file = unnamed_temp_file().expect("temp file");
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
