//! Wiring: targets and probes from the flags, kernel events to records at
//! wall-clock time, records to the sender; a progress line per interval
//! and a final summary with every count of lost events.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use probes::agent::{
    monotonic_to_wall_ns, AgentProbeConfig, AgentProbes, AgentStats, SyscallAttach,
    SyscallSelection, Targets, PROBES, PROBE_NAMES,
};
use telemetry::wire::sender as wire_sender;

use crate::cli::{AttachArg, Cli};
use crate::encode::{Encoder, SharedBook};
use crate::sender::{self, Identity, SendStats};
use crate::series::SeriesBook;
use crate::AgentError;

/// How long a stopping agent keeps trying to deliver what it holds.
const DRAIN_DEADLINE: Duration = Duration::from_secs(5);

/// The syscall numbers of a `--syscalls` value (`all` or names).
pub fn syscall_selection(value: &str) -> Result<SyscallSelection, AgentError> {
    if value == "all" {
        return Ok(SyscallSelection::All);
    }
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            telemetry::model::syscall_nr(name).ok_or_else(|| {
                AgentError::Config(format!("--syscalls: no x86_64 syscall named {name:?}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(SyscallSelection::List)
}

/// The probe configuration the flags ask for.
pub fn probe_config(cli: &Cli) -> Result<AgentProbeConfig, AgentError> {
    let mut exclude = cli.exclude_pids.clone();
    exclude.push(std::process::id());
    if let Some(pid) = crate::local::local_listener_pid(&cli.to) {
        exclude.push(pid);
    }
    Ok(AgentProbeConfig {
        targets: Targets {
            all: cli.all,
            pids: cli.pids.clone(),
            follow_children: cli.follow_children,
            comms: cli.comms.clone(),
            cgroups: cli.cgroups.clone(),
            exclude_pids: exclude,
        },
        syscalls: cli.syscalls.as_deref().map(syscall_selection).transpose()?,
        syscall_attach: match cli.syscall_attach {
            AttachArg::Auto => SyscallAttach::Auto,
            AttachArg::Fentry => SyscallAttach::Fentry,
            AttachArg::Raw => SyscallAttach::Raw,
            AttachArg::PerSyscall => SyscallAttach::PerSyscall,
        },
        page_cache: cli.page_cache,
        blockio: cli.blockio,
        runqueue: cli.runqueue,
        packets: cli.packets.clone(),
        ring_buffer_bytes: cli.ring_buffer_bytes,
        poll_interval: Duration::from_millis(cli.flush_interval_ms),
        ..AgentProbeConfig::default()
    })
}

fn identity(cli: &Cli) -> Result<Identity, AgentError> {
    let token = match &cli.token_file {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|source| AgentError::Io {
                context: format!("--token-file {}", p.display()),
                source,
            })?
            .trim()
            .to_string(),
        None => String::new(),
    };
    let host = cli.host.clone().unwrap_or_else(wire_sender::hostname);
    // The CA file is read at start, so a bad one fails at once.
    let tls = match &cli.tls_ca {
        None => None,
        Some(ca) => {
            let t = endpoint::ClientTls::from_ca_file(ca)
                .map_err(|e| AgentError::Config(e.to_string()))?;
            let name = cli
                .tls_server_name
                .clone()
                .unwrap_or_else(|| host_of(&cli.to).to_string());
            Some((t, name))
        }
    };
    let machine = std::fs::read_to_string("/etc/machine-id").unwrap_or_else(|_| host.clone());
    Ok(Identity {
        to: cli.to.clone(),
        token,
        sender_id: telemetry::source::fnv1a64(format!("loom-agent/{}", machine.trim()).as_bytes()),
        host,
        tls,
    })
}

/// The host part of `HOST:PORT` or `[V6]:PORT`.
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Runs the agent until Ctrl-C / SIGTERM or `--duration-s`.
pub fn run(cli: Cli) -> Result<(), AgentError> {
    let config = probe_config(&cli)?;
    let id = identity(&cli)?;
    // Ctrl-C / SIGTERM and the end of the probe thread wake the main
    // thread, which otherwise sleeps until the next progress line.
    let (wake_tx, wake) = crossbeam_channel::bounded::<()>(4);
    {
        let wake_tx = wake_tx.clone();
        let _ = ctrlc::set_handler(move || {
            let _ = wake_tx.try_send(());
        });
    }
    let send_stats = Arc::new(SendStats::default());
    let sender_stop = Arc::new(AtomicBool::new(false));
    // Records are handed to the sender at least this often.
    let flush_interval = Duration::from_millis(cli.flush_interval_ms);
    let (outbox, sender_thread) = sender::start(
        id.clone(),
        cli.buffer_bytes,
        send_stats.clone(),
        sender_stop.clone(),
        DRAIN_DEADLINE,
        flush_interval,
    );
    let outbox = Arc::new(outbox);
    let book = SharedBook::default();
    let encoder = Encoder::new(
        book.clone(),
        outbox.clone(),
        monotonic_to_wall_ns(),
        flush_interval,
        wake_tx,
    );
    let probes = AgentProbes::start(config, encoder)?;
    let syscalls = probes
        .syscall_plan
        .as_ref()
        .map_or_else(|| "off".to_string(), |p| p.to_string());
    println!(
        "loom-agent attached (syscalls: {syscalls}), host {}, sending to {}",
        id.host, id.to
    );
    let start = Instant::now();
    let deadline = cli.duration_s.map(Duration::from_secs_f64);
    let interval = Duration::from_secs_f64(cli.report_interval_s.max(0.05));
    let mut last_report = Instant::now();
    let mut last = AgentStats::default();
    let mut counted = Counted::default();
    loop {
        let mut wait = interval.saturating_sub(last_report.elapsed());
        if let Some(d) = deadline {
            let left = d.saturating_sub(start.elapsed());
            if left.is_zero() {
                break;
            }
            wait = wait.min(left);
        }
        match wake.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
        if last_report.elapsed() >= interval {
            let now = probes.stats();
            println!(
                "{}",
                progress(&now, &last, &send_stats, last_report.elapsed())
            );
            counted.record(&now, &send_stats, &mut book.lock());
            last = now;
            last_report = Instant::now();
        }
    }
    // The probe thread hands over its last events before it ends.
    let final_stats = probes.stop()?;
    let mut book = book.lock();
    counted.record(&final_stats, &send_stats, &mut book);
    outbox.send_book(&mut book);
    sender_stop.store(true, Ordering::SeqCst);
    drop(outbox);
    let _ = sender_thread.join();
    println!("{}", summary(&final_stats, &send_stats));
    Ok(())
}

/// What the agent already stored of its own counts, so each interval's
/// `agent` records carry the change since the last ones.
#[derive(Default)]
struct Counted {
    /// Per probe: events, kernel drops, queue drops, send drops.
    last: [[u64; 4]; PROBES],
}

impl Counted {
    /// Adds this interval's `agent` records (measurement `agent`, tags
    /// probe and stage; fields events and dropped) for every probe that
    /// produced or lost anything.
    fn record(&mut self, p: &AgentStats, s: &SendStats, book: &mut SeriesBook) {
        let time_us = wire_sender::now_us();
        for i in 0..PROBES {
            let now = [
                p.events[i],
                p.kernel_drops[i],
                s.queue_drops_by_probe[i].load(Ordering::Relaxed),
                s.send_drops_by_probe[i].load(Ordering::Relaxed),
            ];
            if now.iter().all(|&v| v == 0) {
                continue;
            }
            let d: Vec<u64> = (0..4).map(|k| now[k] - self.last[i][k]).collect();
            self.last[i] = now;
            // kernel: events that reached the ring buffer and those lost on
            // it; queue: events the agent took and lost before sending;
            // send: records lost because loom-app could not be reached.
            let stages = [
                (d[0] + d[1], d[1]),
                (d[0], d[2]),
                (d[0] - d[2].min(d[0]), d[3]),
            ];
            for (stage, (events, dropped)) in stages.into_iter().enumerate() {
                book.add_untagged(&telemetry::Record::AgentStat(telemetry::AgentStat {
                    probe: i as u8,
                    stage: stage as u8,
                    time_us,
                    events,
                    dropped,
                }));
            }
        }
    }
}

fn progress(now: &AgentStats, last: &AgentStats, s: &SendStats, dt: Duration) -> String {
    let mut line = String::new();
    for (i, name) in PROBE_NAMES.iter().enumerate() {
        let ev = now.events[i] - last.events[i];
        let lost = now.kernel_drops[i] - last.kernel_drops[i];
        if now.events[i] + now.kernel_drops[i] > 0 {
            line.push_str(&format!(
                "{name} {:.0} events/s ({} dropped), ",
                ev as f64 / dt.as_secs_f64(),
                lost
            ));
        }
    }
    format!(
        "{line}sent {} records, acknowledged {}, queue drops {}, send drops {}, {} ({} connections, {} frames resent), buffered {} KiB",
        s.sent.load(Ordering::Relaxed),
        s.acked.load(Ordering::Relaxed),
        s.queue_drops.load(Ordering::Relaxed),
        s.send_drops.load(Ordering::Relaxed),
        if s.connected.load(Ordering::Relaxed) { "connected" } else { "disconnected" },
        s.connections.load(Ordering::Relaxed),
        s.resent_frames.load(Ordering::Relaxed),
        s.queued_bytes.load(Ordering::Relaxed) >> 10
    )
}

/// The machine-readable final line: `AGENT events=… kernel_drops=… sent=…
/// acked=… queue_drops=… send_drops=… connections=… resent_frames=…`.
fn summary(p: &AgentStats, s: &SendStats) -> String {
    let sum = |a: &[u64; PROBES]| a.iter().sum::<u64>();
    let mut per = String::new();
    for (i, name) in PROBE_NAMES.iter().enumerate() {
        per.push_str(&format!(
            " {name}_events={} {name}_kernel_drops={}",
            p.events[i], p.kernel_drops[i]
        ));
    }
    format!(
        "AGENT events={} kernel_drops={} sent={} acked={} queue_drops={} send_drops={} connections={} resent_frames={}{per}",
        sum(&p.events),
        sum(&p.kernel_drops),
        s.sent.load(Ordering::Relaxed),
        s.acked.load(Ordering::Relaxed),
        s.queue_drops.load(Ordering::Relaxed),
        s.send_drops.load(Ordering::Relaxed),
        s.connections.load(Ordering::Relaxed),
        s.resent_frames.load(Ordering::Relaxed),
    )
}
