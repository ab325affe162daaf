//! Output and timing helpers both endpoints share; the answer lines are
//! parsed by `figures/`, so their shape is fixed here once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Sleeps `d` unless `flag` is set first; true when the full time passed.
pub fn sleep_unless(flag: &AtomicBool, d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if flag.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
    }
    !flag.load(Ordering::Relaxed)
}

/// Parses `T0,T1` (µs, inclusive) for `--query-window-us`.
pub fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("expected T0,T1 in µs, got {s:?}"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|e| format!("{x:?} is not a µs count: {e}"))
    };
    let (t0, t1) = (p(a)?, p(b)?);
    if t0 > t1 {
        return Err(format!("T0 {t0} is after T1 {t1}"));
    }
    Ok((t0, t1))
}

/// One question's answer, as printed.
pub struct AnswerLines<'a> {
    /// Question name (`rocksdb-p1`, ...).
    pub name: &'a str,
    /// Window, µs, inclusive.
    pub t0: u64,
    /// See `t0`.
    pub t1: u64,
    /// The answer for people.
    pub text: &'a str,
    /// `key=value ...` for the `ANSWER` line.
    pub machine: &'a str,
    /// How long the question took.
    pub latency: Duration,
}

impl AnswerLines<'_> {
    /// Prints `Query <name> window [t0, t1] µs: <text>`, with `machine` also
    /// `ANSWER query=<name> t0= t1= <key=value...>`, then
    /// `Query Latency (<name>): <ms> ms`.
    pub fn print(&self, machine: bool) {
        let AnswerLines { name, t0, t1, .. } = self;
        println!("Query {name} window [{t0}, {t1}] µs: {}", self.text);
        if machine {
            println!("ANSWER query={name} t0={t0} t1={t1} {}", self.machine);
        }
        println!(
            "Query Latency ({name}): {:.3} ms",
            self.latency.as_secs_f64() * 1e3
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_parsing() {
        assert_eq!(parse_window("3,15"), Ok((3, 15)));
        assert_eq!(parse_window(" 0 , 0 "), Ok((0, 0)));
        assert!(parse_window("15,3").is_err());
        assert!(parse_window("15").is_err());
        assert!(parse_window("a,3").is_err());
    }

    #[test]
    fn sleep_ends_early_when_the_flag_is_set() {
        let flag = AtomicBool::new(true);
        let t = Instant::now();
        assert!(!sleep_unless(&flag, Duration::from_secs(5)));
        assert!(t.elapsed() < Duration::from_secs(1));
        let flag = AtomicBool::new(false);
        assert!(sleep_unless(&flag, Duration::from_millis(10)));
    }
}
