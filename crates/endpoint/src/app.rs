//! The skeleton both endpoint apps (`loom-app`, `influx-app`) share: a stop
//! flag set by Ctrl-C, named threads, the progress-line loop, the periodic
//! questions over the phase window, the drop percentage of the `Final`
//! line, and the ready file that tells a supervisor (or a test) where every
//! listener is bound. The apps differ in where records go and what they
//! count; that part stays in each app.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::output::sleep_unless;

/// Window of the phase questions: [now − 80 s, now − 20 s].
pub const WINDOW_START_AGO_US: u64 = 80_000_000;
/// See [`WINDOW_START_AGO_US`].
pub const WINDOW_END_AGO_US: u64 = 20_000_000;

/// The phase window `[now − 80 s, now − 20 s]` (µs, inclusive).
pub fn phase_window(now_us: u64) -> (u64, u64) {
    (
        now_us.saturating_sub(WINDOW_START_AGO_US),
        now_us.saturating_sub(WINDOW_END_AGO_US),
    )
}

/// A shared "stop now" flag: set by Ctrl-C (SIGINT/SIGTERM through
/// [`Stop::on_ctrl_c`]) or by whoever runs the app in-process.
#[derive(Clone, Default, Debug)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A flag not set yet.
    pub fn new() -> Self {
        Stop::default()
    }

    /// Sets the flag: the app's ingest loop ends at its next check.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the flag is set.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag itself, for loops that poll an `AtomicBool`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }

    /// Sets the flag on Ctrl-C. Process-wide: call it once, from a binary
    /// (before it announces that it listens, so a supervisor that stops it
    /// right then gets the clean stop).
    pub fn on_ctrl_c(&self) -> Result<(), ctrlc::Error> {
        let s = self.clone();
        ctrlc::set_handler(move || s.stop())
    }
}

/// Starts a named thread.
pub fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}

/// Starts the `report` thread: `tick(interval)` once per `interval` until
/// `finished` is set. The app's tick prints its progress line(s).
pub fn spawn_reporter(
    finished: Arc<AtomicBool>,
    interval: Duration,
    mut tick: impl FnMut(Duration) + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    spawn("report", move || {
        while sleep_unless(&finished, interval) {
            tick(interval);
        }
    })
}

/// Periodic questions: `count` rounds, one per `interval`.
#[derive(Debug, Clone, Copy)]
pub struct Periodic {
    /// Time between rounds.
    pub interval: Duration,
    /// Rounds before the thread ends.
    pub count: u32,
}

/// Starts the `query` thread: every round asks `ask(t0, t1)` over the
/// phase window ending at `now()` (the wall clock for arrival times, the
/// newest stored time for event times). Ends after `p.count` rounds or
/// when `finished` is set.
pub fn spawn_periodic(
    finished: Arc<AtomicBool>,
    p: Periodic,
    now: impl Fn() -> u64 + Send + 'static,
    mut ask: impl FnMut(u64, u64) + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    spawn("query", move || {
        for _ in 0..p.count {
            if !sleep_unless(&finished, p.interval) {
                return;
            }
            let (t0, t1) = phase_window(now());
            ask(t0, t1);
        }
    })
}

/// `dropped` as a percentage of `received` (0 when nothing arrived), as
/// the `Final` line prints it.
pub fn drop_percent(dropped: u64, received: u64) -> f64 {
    if received > 0 {
        dropped as f64 * 100.0 / received as f64
    } else {
        0.0
    }
}

/// Writes the ready file: `{"pid":N,"name":"ip:port"|null,...}` with one
/// entry per listener (`None`: that listener is off). Written to a
/// temporary file beside `path` and renamed, so a reader sees the whole
/// file or none.
pub fn write_ready_file(path: &Path, listeners: &[(&str, Option<SocketAddr>)]) -> io::Result<()> {
    let mut json = format!("{{\"pid\":{}", std::process::id());
    for (name, addr) in listeners {
        match addr {
            Some(a) => json.push_str(&format!(",\"{name}\":\"{a}\"")),
            None => json.push_str(&format!(",\"{name}\":null")),
        }
    }
    json.push_str("}\n");
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(json.as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn the_ready_file_names_every_listener_and_replaces_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready.json");
        let tcp: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        write_ready_file(&path, &[("tcp", Some(tcp)), ("http", None)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"pid\":{},\"tcp\":\"127.0.0.1:7000\",\"http\":null}}\n",
                std::process::id()
            )
        );
        // Only the ready file is left: the temporary one was renamed.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn periodic_rounds_ask_over_the_phase_window_and_stop_on_finish() {
        let finished = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(AtomicU64::new(0));
        let a = asked.clone();
        let p = Periodic {
            interval: Duration::from_millis(1),
            count: 3,
        };
        spawn_periodic(
            finished.clone(),
            p,
            || 100_000_000,
            move |t0, t1| {
                assert_eq!((t0, t1), (20_000_000, 80_000_000));
                a.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 3);
        finished.store(true, Ordering::SeqCst);
        let p = Periodic {
            interval: Duration::from_secs(60),
            count: 3,
        };
        spawn_periodic(finished, p, || 0, |_, _| panic!("asked after finish"))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(drop_percent(1, 4), 25.0);
        assert_eq!(drop_percent(0, 0), 0.0);
    }
}
