"""Parsers for the logs that `make` targets tee into evaluation-output/.

Every pattern the figure scripts rely on is defined in this file, next to the
program that prints it, so a change of a producer's output is fixed here once.
Parsers never raise on bad input: a line that looks like a result line but does
not parse is skipped and reported as a warning string `file:line: why`.
Lines that are not result lines (progress, logging) are ignored silently.

No plotting imports here: the tests import this module alone.
"""

import math
import os
import re
from dataclasses import dataclass, field

# A decimal number as the Rust programs print it (`{:.1}`, `{:.0}`, `{}`).
NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"

# ---------------------------------------------------------------------------
# Ingest scaling (figure 14): baselines/ingest-scaling/src/summary.rs prints
#   db=<db> threads=<t> size=<bytes> records/s=<x> MB/s=<y>
# on stdout, one line per run; progress lines start with `[ingest-scaling]`.
# Logs: evaluation-output/is-<db>[<threads>]-<size> (mk/ingest-scaling.mk).
IS_RESULT_PREFIX = "db="
IS_FIELD = re.compile(r"^(?P<key>[^=\s]+)=(?P<value>\S*)$")
IS_REQUIRED = ("db", "threads", "size", "records/s", "MB/s")
IS_LOG_NAME = re.compile(r"^is-(?P<store>mach-index|mach|lmdb|rocksdb|file)(?P<threads>\d*)-(?P<size>\d+)$")
# Log names in is-* that hold no `db=` lines.
IS_NOT_RESULT_LOGS = ("is-dd", "is-table.md")

# `make is-dd`: GNU dd's last line, e.g.
#   4294967296 bytes (4.3 GB, 4.0 GiB) copied, 3.21 s, 1.3 GB/s
# (some locales print a decimal comma: `3,21 s, 1,3 GB/s`).
DD_RESULT = re.compile(
    r"copied,\s*(?P<secs>\d+(?:[.,]\d+)?(?:e[-+]?\d+)?)\s*s,\s*"
    r"(?P<rate>\d+(?:[.,]\d+)?(?:e[-+]?\d+)?)\s*(?P<unit>[kKMGT]?i?B)/s"
)
DD_BYTES = re.compile(r"^(?P<bytes>\d+) bytes\b")
DD_UNITS = {
    "B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 2.0**10, "kiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40,
}

# ---------------------------------------------------------------------------
# loom-app (apps/loom-app/src/main.rs, queries.rs), figures 10-12, 15, 16.
# Logs: evaluation-output/e2e-mach-app-<query>, ab-mach-<query>-<lookback> (mk/e2e.mk).
#   Records received: r, dropped: d, total received R dropped D, not stored n, late m[, more counts]
# (`late`: records refused as older than their source's newest stored one and than each of
# its late siblings'; `late stored s` follows since late siblings; builds before
# issue 26 wrote `raised m` there instead. influx-app: without `not stored`/`late`; older
# builds: only `Records received: r, dropped: d`;
# loom-app with OTLP appends counts such as `, otlp accepted a ...`)
APP_RECORDS_PREFIX = "Records received:"
APP_RECORDS = re.compile(
    r"^\s*Records received: (?P<r>\d+), dropped: (?P<d>\d+)"
    r"(?:, total received (?P<total_r>\d+) dropped (?P<total_d>\d+))?"
    r"(?:, not stored (?P<not_stored>\d+))?(?:, (?:late|raised) (?P<late>\d+))?(?:, [^,].*)?\s*$"
)
#   Query Latency (<name>): <x> ms      (older builds: Rust Debug durations `1.2ms`, `4.5s`)
APP_LATENCY_PREFIX = "Query Latency"
APP_LATENCY = re.compile(rf"^\s*Query Latency \((?P<name>[^)]+)\):\s*(?P<value>{NUM})\s*(?P<unit>ns|µs|us|ms|s)\s*$")
DURATION_TO_MS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}
#   Query <name> window [t0, t1] µs: <answer text>
APP_ANSWER = re.compile(r"^\s*Query (?P<name>\S+) window \[(?P<t0>\d+), (?P<t1>\d+)\] µs: (?P<text>.*)$")
#   ... KV reads slower than 80 µs: <count>, chunks read: <chunks>   (ablation answers)
#   ANSWER query=<name> t0=.. t1=.. count=<count> chunks_read=<chunks>   (--machine-output)
APP_CHUNKS = re.compile(r"chunks(?: read:|_read=)\s*(?P<chunks>\d+)")
APP_SLOW_COUNT = re.compile(r"slower than \d+ µs: (?P<count>\d+)|(?:^|\s)count=(?P<count2>\d+)")
APP_MACHINE_ANSWER = re.compile(r"^\s*ANSWER query=(?P<name>\S+) t0=(?P<t0>\d+) t1=(?P<t1>\d+)(?P<rest>.*)$")
APP_FAILED = re.compile(r"^\s*Query (?P<name>\S+) failed: (?P<error>.*)$")
#   Ablation <name> lookback <S> s:
APP_ABLATION_HEADER = re.compile(r"^\s*Ablation (?P<name>\S+) lookback (?P<lookback>\d+) s:\s*$")
#   Final: records received R, dropped D (x %), ...
APP_FINAL_PREFIX = "Final:"
APP_FINAL = re.compile(r"^\s*Final: records received (?P<received>\d+), dropped (?P<dropped>\d+)\b")

# Endpoints at exit (crates/telemetry/src/cpu.rs; loom-app, influx-app, file-writer-app):
#   Endpoint CPU: user U s, sys S s, total T s, records received R, CPU s per M records C|-
ENDPOINT_CPU_PREFIX = "Endpoint CPU:"
ENDPOINT_CPU = re.compile(
    rf"^\s*Endpoint CPU: user (?P<user>{NUM}) s, sys (?P<sys>{NUM}) s, total (?P<total>{NUM}) s, "
    rf"records received (?P<records>\d+), CPU s per M records (?:{NUM}|-)\s*$")
# `make influxd-stop INFLUXD_CPU_LOG=<log>` (baselines/influxdb/influxd.sh cpu), after influx-app's run:
#   influxd CPU: user U s, sys S s, total T s
INFLUXD_CPU = re.compile(rf"^\s*influxd CPU: user (?P<user>{NUM}) s, sys (?P<sys>{NUM}) s, total (?P<total>{NUM}) s\s*$")
# Header of one run in an appended log: `== pe-loom-app run 2026-...`
RUN_HEADER = re.compile(r"^== (?P<name>\S+) run\b")

# e2e-<system>-app-<query> (loom-app: system mach; influx-app --complete-data: influx)
# and e2e-influx-app-dropped-<query> (influx-app dropping: system influx-dropped).
E2E_LOG_NAME = re.compile(
    r"^e2e-(?:(?P<dropped>influx)-app-dropped|(?P<system>[a-z0-9]+)-app)-(?P<query>[a-z0-9][a-z0-9,-]*)$")
AB_LOG_NAME = re.compile(r"^ab-(?P<system>[a-z0-9]+)-(?P<query>[a-z0-9][a-z0-9,-]*?)-(?P<lookback>\d+)$")
# Query names of the end-to-end workloads: <workload>-p<phase>.
PHASE_QUERY = re.compile(r"^(?P<workload>[a-z]+)-p(?P<phase>\d+)$")
ABLATION_PREFIX = "ablation-"
ABLATION_MODES = ("noindex", "onlytime", "onlyrange", "timerange")

# ---------------------------------------------------------------------------
# rocksdb-workload (apps/rocksdb-workload/src/main.rs, lib.rs), figure 13.
# Logs: evaluation-output/pe-<endpoint> (mk/probe-effect.mk); pe-*-app are the
# endpoints' own logs, not workload runs. valkey-workload prints the same lines
# (its logs are valkey-pe-*, mk/valkey.mk, not part of figure 13): its progress
# line ends with `, Packets: k` and its average names valkey.
PE_RUN_START = re.compile(r"^\s*Phase: (?P<phase>\S+) destination: (?P<destination>.*)$")
#   Count: i App: a, Syscall: s, Page cache: p, Count: total, Dropped: d[, Packets: k]
PE_PROGRESS_PREFIX = "Count:"
PE_PROGRESS = re.compile(
    r"^\s*Count: (?P<second>\d+) App: (?P<app>\d+), Syscall: (?P<syscall>\d+), "
    r"Page cache: (?P<page_cache>\d+), Count: (?P<total>\d+), Dropped: (?P<dropped>\d+)"
    r"(?:, Packets: (?P<packets>\d+))?\s*$"
)
#   Average rocksdb rate per sec: X   (valkey-workload: Average valkey rate per sec: X)
PE_AVERAGE_PREFIXES = ("Average rocksdb rate per sec", "Average valkey rate per sec")
PE_AVERAGE_PREFIX = PE_AVERAGE_PREFIXES[0]
PE_AVERAGE = re.compile(rf"^\s*Average (?P<workload>rocksdb|valkey) rate per sec:\s*(?P<rate>{NUM})\s*$")
PE_LOG_NAME = re.compile(r"^pe-(?P<name>.+)$")
PE_ENDPOINT_LOG_SUFFIX = "-app"
# Other spellings of an endpoint in pe-<name> (OUT_FILE=...), mapped to one name.
PE_ALIASES = {"mach": "loom", "file": "file-writer", "influxdb": "influx"}


# ---------------------------------------------------------------------------
def _finite(text):
    """Float of `text` if it is a finite number >= 0, else None."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v >= 0 else None


def _int(text):
    try:
        v = int(text)
    except (TypeError, ValueError):
        return None
    return v if v >= 0 else None


def _short(line, n=100):
    line = line.rstrip("\n")
    return line if len(line) <= n else line[:n] + "..."


def read_lines(path):
    """Lines of a log (undecodable bytes replaced, `\\r` progress splits lines).

    Returns (lines, warnings); an unreadable file gives no lines and a warning.
    """
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read().splitlines(), []
    except OSError as e:
        return [], [f"{path}: cannot read: {e}"]


def list_logs(log_dir, prefix):
    """Sorted names of regular files in `log_dir` starting with `prefix`."""
    try:
        names = os.listdir(log_dir)
    except OSError:
        return []
    return sorted(
        n for n in names
        if n.startswith(prefix) and os.path.isfile(os.path.join(log_dir, n))
    )


# ---------------------------------------------------------------------------
# Ingest scaling
@dataclass
class IngestRun:
    """One `db=` result line: a run of one store at one payload size."""
    db: str
    threads: int
    size: int
    records_per_s: float
    mb_per_s: float
    log: str = ""
    line: int = 0


def parse_ingest_line(line):
    """IngestRun of a `db=` result line, None if it is not one, or a str saying why it is malformed."""
    if not line.startswith(IS_RESULT_PREFIX):
        return None
    fields = {}
    for token in line.split():
        m = IS_FIELD.match(token)
        if not m:
            return f"token {token!r} is not key=value"
        fields[m["key"]] = m["value"]
    missing = [k for k in IS_REQUIRED if k not in fields]
    if missing:
        return "missing " + ", ".join(missing)
    threads, size = _int(fields["threads"]), _int(fields["size"])
    rps, mbps = _finite(fields["records/s"]), _finite(fields["MB/s"])
    if not fields["db"]:
        return "empty db"
    if threads is None or threads == 0 or size is None or size == 0:
        return "threads and size must be positive integers"
    if rps is None or mbps is None:
        return "records/s and MB/s must be finite numbers >= 0"
    return IngestRun(fields["db"], threads, size, rps, mbps)


def parse_ingest_log(lines, log=""):
    """(runs, warnings) of one is-* log."""
    runs, warnings = [], []
    name_match = IS_LOG_NAME.match(os.path.basename(log)) if log else None
    for i, line in enumerate(lines, 1):
        r = parse_ingest_line(line.strip())
        if r is None:
            continue
        if isinstance(r, str):
            warnings.append(f"{log}:{i}: skipped malformed result line ({r}): {_short(line)}")
            continue
        r.log, r.line = log, i
        if name_match and int(name_match["size"]) != r.size:
            warnings.append(f"{log}:{i}: size={r.size} but the log name says {name_match['size']}; kept the line's value")
        runs.append(r)
    return runs, warnings


def parse_dd_log(lines, log=""):
    """(write bandwidths in MB/s (10^6 B), warnings) of an is-dd log, one per dd run."""
    rates, warnings = [], []
    for i, line in enumerate(lines, 1):
        if "copied," not in line:
            continue
        m = DD_RESULT.search(line)
        rate = _finite(m["rate"].replace(",", ".")) if m else None
        unit = DD_UNITS.get(m["unit"]) if m else None
        if rate is None or unit is None:
            warnings.append(f"{log}:{i}: skipped unreadable dd line: {_short(line)}")
            continue
        # dd rounds its rate to two digits; bytes / seconds is exact when both are printed.
        b = DD_BYTES.match(line.strip())
        secs = _finite(m["secs"].replace(",", "."))
        if b and secs:
            rates.append(int(b["bytes"]) / secs / 1e6)
        else:
            rates.append(rate * unit / 1e6)
    return rates, warnings


# ---------------------------------------------------------------------------
# loom-app
@dataclass
class QueryResult:
    """One answered query: its latency and, for ablation queries, what it read."""
    name: str
    latency_ms: float
    count: int = None
    chunks_read: int = None
    lookback_s: int = None
    line: int = 0


@dataclass
class AppLog:
    """What a loom-app log says: intervals, queries, totals."""
    intervals: list = field(default_factory=list)   # (received, dropped) per report interval
    queries: list = field(default_factory=list)     # QueryResult
    failed: list = field(default_factory=list)      # (name, error)
    total_received: int = None                      # from the last total/Final line
    total_dropped: int = None
    final: bool = False                             # a `Final:` line was seen
    cpu_s: float = None                             # `Endpoint CPU:` total (user + sys) at exit
    influxd_cpu_s: float = None                     # `influxd CPU:` total, appended after influx-app's run

    def dropped_pct(self):
        """% of received records dropped over the whole log, None without counts."""
        rec, drop = self.totals()
        if rec is None or rec == 0:
            return None
        return 100.0 * drop / rec

    def totals(self):
        """(received, dropped) over the whole log: Final line, else last totals, else sum of intervals."""
        if self.total_received is not None:
            return self.total_received, self.total_dropped
        if self.intervals:
            return sum(r for r, _ in self.intervals), sum(d for _, d in self.intervals)
        return None, None


def parse_duration_ms(value, unit):
    """Milliseconds of `value` in `unit` (ns, µs, us, ms, s); None if not a finite number >= 0."""
    v = _finite(value)
    scale = DURATION_TO_MS.get(unit)
    return None if v is None or scale is None else v * scale


def parse_app_log(lines, log="", default_lookback=None):
    """(AppLog, warnings) of one loom-app log (e2e-* or ab-*)."""
    out, warnings = AppLog(), []
    lookback = default_lookback
    # Last answer per query name, joined with its latency line that follows.
    pending = {}
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip()
        stripped = line.lstrip()
        if stripped.startswith(APP_RECORDS_PREFIX):
            m = APP_RECORDS.match(line)
            if not m:
                warnings.append(f"{log}:{i}: skipped malformed records line: {_short(line)}")
                continue
            r, d = int(m["r"]), int(m["d"])
            if d > r:
                warnings.append(f"{log}:{i}: dropped > received in an interval; kept: {_short(line)}")
            out.intervals.append((r, d))
            if m["total_r"] is not None and not out.final:
                out.total_received, out.total_dropped = int(m["total_r"]), int(m["total_d"])
        elif stripped.startswith(APP_LATENCY_PREFIX):
            m = APP_LATENCY.match(line)
            ms = parse_duration_ms(m["value"], m["unit"]) if m else None
            if ms is None:
                warnings.append(f"{log}:{i}: skipped malformed latency line: {_short(line)}")
                continue
            name = m["name"].strip()
            ans = pending.pop(name, {})
            out.queries.append(QueryResult(
                name, ms, ans.get("count"), ans.get("chunks_read"),
                ans.get("lookback", lookback), i))
        elif stripped.startswith(APP_FINAL_PREFIX):
            m = APP_FINAL.match(line)
            if not m:
                warnings.append(f"{log}:{i}: skipped malformed Final line: {_short(line)}")
                continue
            out.total_received, out.total_dropped = int(m["received"]), int(m["dropped"])
            out.final = True
        elif stripped.startswith(ENDPOINT_CPU_PREFIX):
            m = ENDPOINT_CPU.match(line)
            if m:
                out.cpu_s = float(m["total"])
            elif "unavailable" not in line:
                warnings.append(f"{log}:{i}: skipped malformed Endpoint CPU line: {_short(line)}")
        elif (m := INFLUXD_CPU.match(line)):
            out.influxd_cpu_s = float(m["total"])
        elif (m := APP_ABLATION_HEADER.match(line)):
            lookback = int(m["lookback"])
        elif (m := APP_FAILED.match(line)):
            out.failed.append((m["name"], m["error"]))
            warnings.append(f"{log}:{i}: query {m['name']} failed: {_short(m['error'], 80)}")
        elif (m := APP_ANSWER.match(line)) or (m := APP_MACHINE_ANSWER.match(line)):
            text = m["text"] if "text" in m.re.groupindex else m["rest"]
            ans = pending.setdefault(m["name"], {"lookback": lookback})
            c = APP_CHUNKS.search(text)
            if c:
                ans["chunks_read"] = int(c["chunks"])
            s = APP_SLOW_COUNT.search(text)
            if s:
                ans["count"] = int(s["count"] or s["count2"])
    return out, warnings


def e2e_log(name):
    """(system, query) of an e2e log name (system `mach`, `influx` or `influx-dropped`), None if not one."""
    m = E2E_LOG_NAME.match(name)
    if not m:
        return None
    return ("influx-dropped" if m["dropped"] else m["system"]), m["query"]


def truncation_warning(lines, log, app):
    """A warning when an endpoint log ends before its `Final:` line (run killed or still running)."""
    if lines and not app.final:
        return f"{log}: no `Final:` line: the run was cut short or is still running; its counts are partial"
    return None


def phase_of(query):
    """(workload, phase number) of a query name like `rocksdb-p1`, or None."""
    m = PHASE_QUERY.match(query)
    return (m["workload"], int(m["phase"])) if m else None


def ablation_mode(name):
    """`timerange` for `ablation-timerange` (or `timerange`); None if not an ablation mode."""
    mode = name[len(ABLATION_PREFIX):] if name.startswith(ABLATION_PREFIX) else name
    return mode if mode in ABLATION_MODES else None


# ---------------------------------------------------------------------------
# rocksdb-workload (probe effect)
@dataclass
class WorkloadRun:
    """One run of rocksdb-workload: its average ops/s and per-second telemetry counts."""
    ops_per_s: float
    sent: int = 0        # telemetry records sent (sum of the per-second `Count:` totals)
    dropped: int = 0     # telemetry records dropped
    seconds: int = 0     # per-second lines seen
    line: int = 0

    def dropped_pct(self):
        """% of telemetry records dropped (of sent + dropped), None without progress lines."""
        n = self.sent + self.dropped
        return 100.0 * self.dropped / n if n else None


def parse_workload_log(lines, log=""):
    """(runs, warnings) of a pe-* log; appended runs each end at their `Average` line."""
    runs, warnings = [], []
    sent = dropped = seconds = 0
    started = False
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip()
        stripped = line.lstrip()
        if PE_RUN_START.match(line):
            if started and seconds:
                warnings.append(f"{log}:{i}: previous run has no `Average rocksdb rate` line; ignored")
            sent = dropped = seconds = 0
            started = True
        elif stripped.startswith(PE_PROGRESS_PREFIX):
            m = PE_PROGRESS.match(line)
            if not m:
                warnings.append(f"{log}:{i}: skipped malformed progress line: {_short(line)}")
                continue
            sent += int(m["total"])
            dropped += int(m["dropped"])
            seconds += 1
            started = True
        elif stripped.startswith(PE_AVERAGE_PREFIXES):
            m = PE_AVERAGE.match(line)
            rate = _finite(m["rate"]) if m else None
            if rate is None:
                warnings.append(f"{log}:{i}: skipped malformed average line: {_short(line)}")
            else:
                runs.append(WorkloadRun(rate, sent, dropped, seconds, i))
            sent = dropped = seconds = 0
            started = False
    if started and seconds:
        warnings.append(f"{log}: last run has no `Average rocksdb rate` line (still running or killed); ignored")
    return runs, warnings


def pe_endpoint(log_name):
    """Endpoint of a pe-<name> log (`loom` for pe-mach), None for an endpoint's own log (pe-*-app)."""
    m = PE_LOG_NAME.match(log_name)
    if not m or log_name.endswith(PE_ENDPOINT_LOG_SUFFIX):
        return None
    return PE_ALIASES.get(m["name"], m["name"])


# ---------------------------------------------------------------------------
# Endpoint CPU of the probe-effect endpoints (pe-<endpoint>-app logs, appended runs)
@dataclass
class EndpointRun:
    """One run of an endpoint: its CPU seconds (user + sys) and the records it received."""
    cpu_s: float
    records: int
    influxd_cpu_s: float = None     # InfluxDB: the server's own CPU, reported separately
    line: int = 0

    def total_cpu_s(self):
        return self.cpu_s + (self.influxd_cpu_s or 0.0)

    def cpu_s_per_m_records(self):
        """CPU seconds (endpoint + influxd) per million records received; None without records."""
        return self.total_cpu_s() * 1e6 / self.records if self.records else None


def parse_endpoint_log(lines, log=""):
    """(runs, warnings) of a pe-<endpoint>-app log: one EndpointRun per `Endpoint CPU:` line,
    with the `influxd CPU:` line that follows it (before the next run header) attached."""
    runs, warnings = [], []
    header_line, cpu_seen = 0, True
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if RUN_HEADER.match(line):
            if not cpu_seen:
                warnings.append(f"{log}:{header_line}: run has no `Endpoint CPU:` line (cut short); ignored")
            header_line, cpu_seen = i, False
        elif line.lstrip().startswith(ENDPOINT_CPU_PREFIX):
            m = ENDPOINT_CPU.match(line)
            if not m:
                warnings.append(f"{log}:{i}: skipped malformed Endpoint CPU line: {_short(line)}")
                continue
            runs.append(EndpointRun(float(m["total"]), int(m["records"]), line=i))
            cpu_seen = True
        elif (m := INFLUXD_CPU.match(line)):
            if runs and runs[-1].influxd_cpu_s is None:
                runs[-1].influxd_cpu_s = float(m["total"])
    if not cpu_seen and header_line:
        warnings.append(f"{log}:{header_line}: last run has no `Endpoint CPU:` line (cut short or running); ignored")
    return runs, warnings


def pe_endpoint_app(log_name):
    """Endpoint of an endpoint's own log pe-<endpoint>-app (`loom` for pe-mach-app), else None."""
    m = PE_LOG_NAME.match(log_name)
    if not m or not log_name.endswith(PE_ENDPOINT_LOG_SUFFIX):
        return None
    name = m["name"][: -len(PE_ENDPOINT_LOG_SUFFIX)]
    return PE_ALIASES.get(name, name)


# Valkey probe cost (valkey-workload, logs valkey-pe-<probes>, mk/valkey.mk):
# same lines as the RocksDB workload; `Average valkey rate per sec` = requests/s.
VALKEY_PE_LOG_NAME = re.compile(r"^valkey-pe-(?P<probes>none|syscalls|both)$")
