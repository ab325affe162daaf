//! Flags of `loom-agent`, and `--config FILE`: a TOML table whose keys are
//! the long flag names (`to = "db-3:7878"`, `pid = [41, 42]`, `all = true`,
//! `syscalls = "pread64,write"`), read as if given first on the command
//! line, so flags given too win (and repeatable ones add up).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

/// Attach Loom's probes to processes, cgroups or the whole host and stream
/// their records to loom-app.
#[derive(Parser, Debug, Clone)]
#[command(name = "loom-agent", args_override_self = true)]
pub struct Cli {
    /// loom-app's telemetry address (HOST:PORT).
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub to: String,
    /// Trace this process and all its threads (repeatable).
    #[arg(long = "pid")]
    pub pids: Vec<u32>,
    /// With --pid: processes the targets fork later are traced too.
    #[arg(long)]
    pub follow_children: bool,
    /// Trace processes with this name, as in /proc/PID/comm (repeatable).
    /// Matched on the process's main thread name: a thread that renames
    /// itself still counts as its process.
    #[arg(long = "comm")]
    pub comms: Vec<String>,
    /// Trace the tasks in this cgroup v2 directory and its subtree
    /// (repeatable), e.g. /sys/fs/cgroup/unified/system.slice/redis.service.
    #[arg(long = "cgroup")]
    pub cgroups: Vec<PathBuf>,
    /// Trace every process on the host except this agent and a loom-app
    /// listening on --to on this host.
    #[arg(long)]
    pub all: bool,
    /// Never trace this process (repeatable).
    #[arg(long = "exclude-pid")]
    pub exclude_pids: Vec<u32>,
    /// Record syscalls: all of them, or the comma-separated names given
    /// (`pread64,write`).
    #[arg(long, num_args = 0..=1, default_missing_value = "all")]
    pub syscalls: Option<String>,
    /// How the syscall probe attaches: auto (fentry for a list of up to 32
    /// names the kernel has functions for, else per-syscall tracepoints for
    /// up to 64 names, else raw_syscalls; the choice and any fallback
    /// reason are printed on the "attached" line), fentry, per-syscall
    /// (alias tracepoint), raw.
    #[arg(long, value_enum, default_value = "auto")]
    pub syscall_attach: AttachArg,
    /// Record page-cache insertions.
    #[arg(long)]
    pub page_cache: bool,
    /// Record block I/O requests (issue to completion).
    #[arg(long)]
    pub blockio: bool,
    /// Record run-queue waits (wake-up to on-CPU).
    #[arg(long)]
    pub runqueue: bool,
    /// Record TCP/UDP packets arriving at this interface (its TC ingress
    /// hook), to or from PORT when given: `lo:6379`, `eth0`. Packets have no
    /// process at ingress, so the targets do not select them and their
    /// series carry only the `host` tag.
    #[arg(long, value_name = "IFACE[:PORT]")]
    pub packets: Option<probes::agent::PacketSelection>,
    /// Bytes of each probe's ring buffer (a power of two). Each ring is
    /// mapped twice into the agent (its RSS); 4 MiB held a 1.2 M events/s
    /// storm without a drop (docs/deploy.md, "What the agent costs").
    #[arg(long, default_value_t = 4 << 20)]
    pub ring_buffer_bytes: u32,
    /// Milliseconds between the agent's rounds: reading the ring buffers
    /// (sooner when one holds 256 KiB) and sending what they held. Longer
    /// rounds cost less CPU (each wakes three threads); records reach
    /// loom-app up to about two rounds after they happen. 200 ms: 0.19
    /// CPU-s per million events at 31 k events/s, where 50 ms took 0.36
    /// (docs/deploy.md, "What the agent costs").
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=5000))]
    pub flush_interval_ms: u64,
    /// Bytes of frames kept until loom-app acknowledges them as durable
    /// (and while it cannot be reached); beyond this the newest records are
    /// dropped and counted (send drops).
    #[arg(long, default_value_t = 64 << 20)]
    pub buffer_bytes: u64,
    /// File holding loom-app's token (its --auth-token-file).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Speak TLS to loom-app (its --tls-cert/--tls-key), trusting the CA
    /// certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// With --tls-ca: the name loom-app's certificate must carry (default:
    /// the host part of --to).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    pub tls_server_name: Option<String>,
    /// The `host` tag of every series (default: this machine's host name).
    #[arg(long)]
    pub host: Option<String>,
    /// Seconds between progress lines.
    #[arg(long, default_value_t = 1.0)]
    pub report_interval_s: f64,
    /// Stop after this many seconds (default: until Ctrl-C / SIGTERM).
    #[arg(long)]
    pub duration_s: Option<f64>,
    /// Read flags from this TOML file (keys = long flag names).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// `--syscall-attach` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AttachArg {
    /// fentry for short lists, per-syscall tracepoints or raw otherwise.
    Auto,
    /// fentry/fexit on each listed syscall's function (__x64_sys_NAME).
    Fentry,
    /// raw_syscalls sys_enter/sys_exit.
    Raw,
    /// syscalls:sys_enter_NAME/sys_exit_NAME.
    #[value(alias = "tracepoint")]
    PerSyscall,
}

/// The command line with the `--config` file's flags put first.
pub fn args_with_config(args: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let pos = args
        .iter()
        .position(|a| a == "--config" || a.to_string_lossy().starts_with("--config="));
    let Some(pos) = pos else {
        return Ok(args);
    };
    let path = match args[pos].to_string_lossy().strip_prefix("--config=") {
        Some(p) => PathBuf::from(p),
        None => args
            .get(pos + 1)
            .map(PathBuf::from)
            .ok_or("--config needs a file")?,
    };
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("--config {}: {e}", path.display()))?;
    let from_file = config_args(&text).map_err(|e| format!("--config {}: {e}", path.display()))?;
    let mut out = vec![args[0].clone()];
    out.extend(from_file.into_iter().map(OsString::from));
    out.extend(args.into_iter().skip(1));
    Ok(out)
}

/// The flags a TOML config stands for.
pub fn config_args(text: &str) -> Result<Vec<String>, String> {
    let table: toml::Table = text.parse().map_err(|e| format!("not TOML: {e}"))?;
    let mut out = Vec::new();
    for (key, value) in table {
        if key == "config" {
            return Err("a config file cannot name another".into());
        }
        let flag = format!("--{}", key.replace('_', "-"));
        let scalar = |v: &toml::Value| match v {
            toml::Value::String(s) => Ok(s.clone()),
            toml::Value::Integer(i) => Ok(i.to_string()),
            toml::Value::Float(f) => Ok(f.to_string()),
            other => Err(format!("{key}: unsupported value {other}")),
        };
        match &value {
            toml::Value::Boolean(true) => out.push(flag),
            toml::Value::Boolean(false) => {}
            toml::Value::Array(items) => {
                for v in items {
                    out.push(flag.clone());
                    out.push(scalar(v)?);
                }
            }
            v => {
                out.push(flag);
                out.push(scalar(v)?);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_files_read_as_flags_and_flags_win() {
        let args = config_args(
            "to = \"db-3:7878\"\npid = [41, 42]\nall = false\nsyscalls = \"pread64\"\nblockio = true\n",
        )
        .unwrap();
        let mut argv = vec!["loom-agent".to_string()];
        argv.extend(args);
        argv.extend(["--to".to_string(), "x:1".to_string()]);
        let cli = Cli::try_parse_from(argv).unwrap();
        assert_eq!(cli.to, "x:1");
        assert_eq!(cli.pids, vec![41, 42]);
        assert!(!cli.all && cli.blockio);
        assert_eq!(cli.syscalls.as_deref(), Some("pread64"));
        assert!(config_args("pid = [[1]]").is_err());
        assert!(config_args("not toml ===").is_err());
        let cli = Cli::try_parse_from(["loom-agent", "--syscalls", "--all"]).unwrap();
        assert_eq!(cli.syscalls.as_deref(), Some("all"));
    }
}
