//! Test-support process for `loom-agent`'s tests (found through
//! `CARGO_BIN_EXE_loom-agent-test-child`; not a tool).
//!
//! `child NAME MODE ARGS…`: renames itself to NAME (its /proc/PID/comm),
//! prints `READY <pid>`, waits for a line on stdin, then:
//! - `preads K [GAP_US]`: makes exactly K pread64 calls (GAP_US µs apart,
//!   default none), printing the wall-clock µs before and after each as
//!   `CALL <before> <after>`;
//! - `direct PATH MIB`: writes MIB MiB to PATH with O_DIRECT;
//! - `spin MS`: two threads busy on CPU 0 for MS ms, printing `TID <tid>`;
//! - `steps STEP…`: each STEP in turn, `p:K` (K pread64 calls), `n:NAME`
//!   (rename itself) or `c:DIR` (move itself into cgroup directory DIR).
//!
//! and prints `DONE`, then waits for stdin to close before exiting.

use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Renames the calling thread (here the process's only one, its leader).
fn rename(name: &str) {
    let name = std::ffi::CString::new(name).expect("name");
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// Makes exactly `k` pread64 calls, `gap` apart; the `CALL` log lines.
fn preads(k: u64, gap: Option<Duration>) -> String {
    let f = std::fs::File::open("/proc/self/exe").expect("open");
    let mut buf = [0u8; 64];
    let mut log = String::new();
    for i in 0..k {
        let before = now_us();
        // SAFETY: the buffer is valid for its length.
        let n = unsafe {
            libc::syscall(
                libc::SYS_pread64,
                f.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
                (i % 4096) as i64,
            )
        };
        assert!(n >= 0, "pread64 failed");
        log.push_str(&format!("CALL {before} {}\n", now_us()));
        if let Some(g) = gap {
            std::thread::sleep(g);
        }
    }
    log
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    rename(&args[1]);
    let out = std::io::stdout();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    writeln!(out.lock(), "READY {}", std::process::id()).unwrap();
    stdin.read_line(&mut line).unwrap();
    match args[2].as_str() {
        "preads" => {
            let k: u64 = args[3].parse().expect("K");
            let gap = args
                .get(4)
                .map(|g| Duration::from_micros(g.parse().expect("GAP_US")));
            let log = preads(k, gap);
            out.lock().write_all(log.as_bytes()).unwrap();
        }
        "steps" => {
            for step in &args[3..] {
                match step.split_once(':').expect("STEP is X:ARG") {
                    ("p", k) => drop(preads(k.parse().expect("K"), None)),
                    ("n", name) => rename(name),
                    ("c", dir) => std::fs::write(
                        std::path::Path::new(dir).join("cgroup.procs"),
                        std::process::id().to_string(),
                    )
                    .expect("move into the cgroup"),
                    (other, _) => panic!("unknown step {other}"),
                }
            }
        }
        "direct" => {
            let mib: usize = args[4].parse().expect("MiB");
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(libc::O_DIRECT)
                .open(&args[3])
                .expect("open O_DIRECT");
            let layout = std::alloc::Layout::from_size_align(1 << 20, 4096).unwrap();
            // SAFETY: non-zero size; freed below.
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            // SAFETY: p points at 1 MiB.
            let chunk = unsafe { std::slice::from_raw_parts(p, 1 << 20) };
            for _ in 0..mib {
                f.write_all(chunk).expect("write");
            }
            f.sync_all().expect("fsync");
            // SAFETY: allocated above with this layout.
            unsafe { std::alloc::dealloc(p, layout) };
        }
        "spin" => {
            let ms: u64 = args[3].parse().expect("ms");
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    std::thread::spawn(move || {
                        // SAFETY: the set is zeroed then CPU 0 set; the call
                        // reads it for its size.
                        unsafe {
                            let mut set: libc::cpu_set_t = std::mem::zeroed();
                            libc::CPU_SET(0, &mut set);
                            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
                        }
                        println!("TID {}", unsafe { libc::gettid() });
                        let end = Instant::now() + Duration::from_millis(ms);
                        let mut x = 0u64;
                        while Instant::now() < end {
                            x = x.wrapping_add(1);
                        }
                        x
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
        other => panic!("unknown mode {other}"),
    }
    writeln!(out.lock(), "DONE").unwrap();
    let _ = stdin.read_line(&mut line);
}
