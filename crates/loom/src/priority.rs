//! Lower scheduling priority for threads whose work can wait (compression,
//! export): on a busy machine the ingest path gets the CPU first.

/// Sets the calling thread's nice value to `nice` (Linux: nice is per
/// thread, so only this thread is lowered).
pub fn lower_thread_priority(nice: i32) -> std::io::Result<()> {
    // SAFETY: plain system calls about the calling thread.
    let r = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
