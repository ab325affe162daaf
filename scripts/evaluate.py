"""The whole evaluation on one machine: `make evaluate-small` (mk/evaluate.mk).

    scripts/evaluate.py run        every step, then `make figures` and the summary
    scripts/evaluate.py summary    the summary (figures with data, key numbers) from existing logs
    scripts/evaluate.py plan       the steps and their expected times, nothing run

The scale knobs come from the environment (EVAL_*, set by mk/evaluate.mk, which
holds their small, tiny and published values). Each step runs existing make
targets of mk/*.mk (so the logs in evaluation-output/ are the ones `make figures`
reads), starting and stopping every process itself: influxd, the endpoints
(loom-app, influx-app, file-writer-app), the workloads (rocksdb-workload,
valkey-workload, which start their own Valkey/Redis server) and tcp-replay.

One line per step: number, elapsed time of the run, the step, its status, how
long it took and how long it was expected to take. A failing step is reported
and the others go on (an end-to-end replay whose recording failed is skipped).
Everything the commands print goes to EVAL_OUT/evaluate.log.
"""

import datetime
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "figures"))

import evalproc  # noqa: E402
from evallogs import cpu_model, fmt, last_average, read_dd, rel, summarize_app  # noqa: E402
from evalproc import Background, StepError  # noqa: E402

ENDPOINT_PORT = 7878
FAMILIES = ["build", "env", "dd", "record", "e2e", "pe", "valkey-pe", "is", "ab", "figures"]
# Logs each family writes, archived before it runs so one run's logs are not mixed with the last.
FAMILY_LOGS = {
    "dd": ("is-dd",),
    "record": ("record-",),
    "e2e": ("e2e-", "replay-e2e-"),
    "pe": ("pe-",),
    "valkey-pe": ("valkey-pe-",),
    "is": ("is-mach", "is-lmdb", "is-rocksdb", "is-file", "is-table"),
    "ab": ("ab-", "replay-ab-"),
}
IS_STORES = [("is-mach", {}), ("is-mach-index", {}), ("is-lmdb", {}), ("is-rocksdb", {"THREADS": "1"}),
             ("is-rocksdb", {"THREADS": "2"}), ("is-file", {"THREADS": "1"})]
ABLATION_QUERY = "ablation-noindex,ablation-onlytime,ablation-onlyrange,ablation-timerange"
# Bytes a stored P2 record takes in Loom (10-byte record header + 24-28 B payload, chunk and index overhead).
ABLATION_BYTES_PER_RECORD = 40
# An ablation run that lost more of its replay than this is reported as failed.
AB_MAX_DROPPED_PCT = 5.0
# Rough rates of this machine kind (2 cores), for expected times only.
INFLUX_POINTS_PER_S = 200_000
RECORD_RATE = {"rocksdb-p1": 235_000, "rocksdb-p2": 355_000, "rocksdb-p3": 385_000,
               "valkey-p1": 85_000, "valkey-p2": 160_000, "valkey-p3": 255_000}


@dataclass
class Knobs:
    scale: str
    record_s: int
    record_warmup_s: int
    query_interval_s: int
    query_count: int
    complete_replay_s: int
    pe_rounds: int
    pe_duration_s: int
    pe_warmup_s: int
    valkey_pe_rounds: int
    valkey_pe_s: int
    is_runs: int
    is_duration_s: int
    is_sizes: list
    dd_mb: int
    ab_lookbacks: list
    ab_speed: float
    ab_max_rate: float
    ab_reps: int
    workloads: list
    phases: list
    steps: list
    synthetic_fallback: bool
    eval_out: str
    tmp_data_dir: str
    recording_dir: str

    @classmethod
    def from_env(cls):
        def get(name):
            v = os.environ.get(name)
            if v is None:
                raise SystemExit(f"evaluate.py: {name} is not set; run it through `make evaluate-small` (mk/evaluate.mk)")
            return v.strip()

        def num(name, kind=int):
            v = get(name)
            try:
                x = kind(v)
            except ValueError:
                raise SystemExit(f"evaluate.py: {name}={v!r} is not a number")
            if x < 0 or (kind is float and not x > 0):
                raise SystemExit(f"evaluate.py: {name}={v!r} must be positive")
            return x

        steps = [s for s in get("EVAL_STEPS").replace(",", " ").split() if s]
        if steps == ["all"]:
            steps = list(FAMILIES)
        bad = [s for s in steps if s not in FAMILIES]
        if bad:
            raise SystemExit(f"evaluate.py: EVAL_STEPS has {', '.join(bad)}; allowed: all or {', '.join(FAMILIES)}")
        return cls(
            scale=get("EVAL_SCALE"), record_s=num("EVAL_RECORD_S"), record_warmup_s=num("EVAL_RECORD_WARMUP_S"),
            query_interval_s=num("EVAL_QUERY_INTERVAL_S"), query_count=num("EVAL_QUERY_COUNT"),
            complete_replay_s=num("EVAL_COMPLETE_REPLAY_S"), pe_rounds=num("EVAL_PE_ROUNDS"),
            pe_duration_s=num("EVAL_PE_DURATION_S"), pe_warmup_s=num("EVAL_PE_WARMUP_S"),
            valkey_pe_rounds=num("EVAL_VALKEY_PE_ROUNDS"), valkey_pe_s=num("EVAL_VALKEY_PE_S"),
            is_runs=num("EVAL_IS_RUNS"), is_duration_s=num("EVAL_IS_DURATION_S"),
            is_sizes=[int(s) for s in get("EVAL_IS_SIZES").split()], dd_mb=num("EVAL_DD_MB"),
            ab_lookbacks=[int(s) for s in get("EVAL_AB_LOOKBACKS").split()], ab_speed=num("EVAL_AB_SPEED", float),
            ab_max_rate=num("EVAL_AB_MAX_RATE", float),
            ab_reps=num("EVAL_AB_REPS"), workloads=get("EVAL_WORKLOADS").split(), phases=get("EVAL_PHASES").split(),
            steps=steps, synthetic_fallback=get("EVAL_SYNTHETIC_FALLBACK") == "1", eval_out=get("EVAL_OUT"), tmp_data_dir=get("TMP_DATA_DIR"),
            recording_dir=get("RECORDING_DIR"))

    @property
    def replay_s(self):
        """End-to-end replay: every query round plus 5 s for the last one to finish."""
        return self.query_interval_s * self.query_count + 5


@dataclass
class Step:
    family: str
    name: str
    expected_s: float
    action: object
    status: str = "not run"
    detail: str = ""
    took_s: float = 0.0
    args: dict = field(default_factory=dict)


class Evaluation:
    def __init__(self, k):
        self.k = k
        self.log = os.path.join(k.eval_out, "evaluate.log")
        self.failed_recordings = set()
        self.start = time.monotonic()

    # ---------------------------------------------------------------- helpers
    def make(self, target, timeout_s, **vars_):
        """`make target VAR=value...` with output to evaluate.log; StepError on failure."""
        cmd = ["make", "--no-print-directory", target] + [f"{k}={v}" for k, v in vars_.items()]
        rc = evalproc.run(cmd, self.log, timeout_s, cwd=REPO)
        if rc != 0:
            raise StepError(f"`{' '.join(cmd)}` failed (status {rc}); see {rel(self.log)}")

    def make_bg(self, target, **vars_):
        cmd = ["make", "--no-print-directory", target] + [f"{k}={v}" for k, v in vars_.items()]
        return Background(cmd, self.log, cwd=REPO)

    def endpoint_run(self, endpoint, sender, sender_log, timeout_s):
        """Starts `endpoint` (make target + vars), waits until it listens, runs `sender` into
        `sender_log`, then waits for the endpoint to end by itself (it stops after one connection)."""
        evalproc.wait_port_free(ENDPOINT_PORT)
        bg = self.make_bg(endpoint[0], **endpoint[1])
        try:
            evalproc.wait_listening(ENDPOINT_PORT, bg)
            t0 = time.monotonic()
            cmd = ["make", "--no-print-directory", sender[0]] + [f"{k}={v}" for k, v in sender[1].items()]
            rc = evalproc.run(cmd, sender_log, timeout_s, cwd=REPO)
            left = max(30.0, timeout_s - (time.monotonic() - t0))
            erc = bg.wait(left)
            if erc is None:
                raise StepError(f"endpoint `{endpoint[0]}` did not end {left:.0f} s after the sender; stopped")
            if erc != 0:
                raise StepError(f"endpoint `{endpoint[0]}` failed (status {erc}); see {rel(self.log)}")
            if rc != 0:
                raise StepError(f"sender `{sender[0]}` failed (status {rc}); see {rel(sender_log)}")
        finally:
            if bg.running():
                bg.stop()

    def out(self, name):
        return os.path.join(self.k.eval_out, name)

    def recording(self, q):
        return os.path.join(self.k.recording_dir, q)

    # ---------------------------------------------------------------- steps
    def steps(self):
        k, s = self.k, []
        fam = set(k.steps)

        def add(family, name, expected_s, action, **args):
            if family in fam:
                s.append(Step(family, name, expected_s, action, args=args))

        built = os.path.exists(os.path.join(REPO, "target", "release", "loom-app"))
        # From scratch: 4 min 25 s measured on a 2-core machine of this kind.
        add("build", "build (cargo, figures venv)", 150 if built else 330, self.build)
        add("env", "check root, tracefs, influxd, redis/valkey", 3, self.check_env)
        add("dd", f"is-dd: direct-I/O write of {k.dd_mb} MiB", 2 + k.dd_mb / 2000, self.dd)
        for wl in k.workloads:
            for ph in k.phases:
                add("record", f"record-{wl}-{ph}: live, {k.record_s} s", k.record_warmup_s + k.record_s + 6,
                    self.record, wl=wl, ph=ph)
        for wl in k.workloads:
            for ph in k.phases:
                q = f"{wl}-{ph}"
                rate = RECORD_RATE.get(q, 200_000)
                add("e2e", f"e2e {q} -> loom-app, {k.replay_s} s", k.replay_s + 2, self.e2e_loom, q=q)
                # influxd answers a phase question over millions of points in up to ~20 s.
                add("e2e", f"e2e {q} -> influx-app (dropping), {k.replay_s} s", k.replay_s + 10,
                    self.e2e_influx, q=q, complete=False)
                # influxd writes while the replay runs; what it cannot keep up with is written after.
                backlog = max(0.15, rate / INFLUX_POINTS_PER_S - 1) * k.complete_replay_s
                add("e2e", f"e2e {q} -> influx-app --complete-data, {k.complete_replay_s} s + backlog",
                    k.complete_replay_s + backlog + 20, self.e2e_influx, q=q, complete=True)
        one = k.pe_warmup_s + k.pe_duration_s + 2
        for r in range(1, k.pe_rounds + 1):
            add("pe", f"probe effect round {r}/{k.pe_rounds}: noop, file, Loom, InfluxDB ({k.pe_duration_s} s each)",
                4 * one + 4, self.pe_round, r=r)
        for r in range(1, k.valkey_pe_rounds + 1):
            add("valkey-pe", f"Valkey probe cost round {r}/{k.valkey_pe_rounds}: none, syscalls, both",
                3 * (k.valkey_pe_s + 5), self.valkey_pe_round, r=r)
        for size in k.is_sizes:
            add("is", f"ingest scaling {size} B: 6 stores x {k.is_runs} x {k.is_duration_s} s",
                len(IS_STORES) * k.is_runs * (k.is_duration_s + 0.5) + 1, self.ingest, size=size)
        for lb in k.ab_lookbacks:
            ingest_s = (125 + lb) / self.ab_speed(RECORD_RATE["rocksdb-p2"])
            add("ab", f"ablation lookback {lb} s: 4 modes x {k.ab_reps}", ingest_s * 1.05 + 2 + k.ab_reps * 4,
                self.ablation, lb=lb)
        add("figures", "make figures", 12, self.figures)
        return s

    def build(self):
        # The same build as every make target (Makefile CARGO_BUILD_ALL): a
        # `-p` set unifies features differently, and the targets it runs
        # would then compile again.
        rc = evalproc.run(["cargo", "build", "--release", "--workspace", "--bins", "--examples"],
                          self.log, 3600, cwd=REPO)
        if rc != 0:
            raise StepError(f"cargo build failed (status {rc}); see {rel(self.log)}")
        self.make("figures-deps", 900)
        return "built the workspace"

    def check_env(self):
        problems = []
        if os.geteuid() != 0:
            problems.append("not root: the live recordings and probe-effect runs load eBPF probes (run as root)")
        if not os.path.ismount("/sys/kernel/tracing"):
            rc = subprocess.call(["mount", "-t", "tracefs", "tracefs", "/sys/kernel/tracing"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if rc != 0:
                problems.append("tracefs is not mounted at /sys/kernel/tracing and mounting it failed")
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            problems.append("no kernel BTF at /sys/kernel/btf/vmlinux (the probes need it)")
        for binary, pkg in (("influxd", "influxdb"), ("curl", "curl")):
            if shutil.which(binary) is None:
                problems.append(f"{binary} missing: apt-get install {pkg} (or make deps)")
        if shutil.which("valkey-server") is None and shutil.which("redis-server") is None:
            problems.append("neither valkey-server nor redis-server: apt-get install redis-server (or make deps)")
        if problems:
            raise StepError("; ".join(problems))
        return "root, tracefs, BTF, influxd, " + ("valkey-server" if shutil.which("valkey-server") else "redis-server")

    def dd(self):
        # IS_OUT: mk/ingest-scaling.mk's log folder (fixed to evaluation-output/ unless given).
        self.make("is-dd", 600, DD_MB=self.k.dd_mb, TMP_DATA_DIR=self.k.tmp_data_dir, IS_OUT=self.k.eval_out)
        rates = read_dd(self.out("is-dd"))
        return f"{rates[-1]:.0f} MB/s" if rates else "no dd rate in the log"

    def record(self, wl, ph):
        k, q = self.k, f"{wl}-{ph}"
        log = self.out(f"record-{q}")
        target = f"record-{q}"
        if wl == "rocksdb":
            vars_ = dict(RECORD_DURATION=k.record_s, RECORD_WARMUP=k.record_warmup_s)
        else:
            vars_ = dict(VALKEY_RECORD_DURATION=k.record_s, VALKEY_RECORD_WARMUP=k.record_warmup_s)
        cmd = ["make", "--no-print-directory", target, "CARGO=true"] + [f"{a}={b}" for a, b in vars_.items()]
        rc = evalproc.run(cmd, log, 3 * (k.record_s + k.record_warmup_s) + 120, cwd=REPO)
        if rc != 0 or not os.path.exists(self.recording(q)):
            why = f"live recording failed (status {rc}); see {rel(log)}"
            if not k.synthetic_fallback:
                self.failed_recordings.add(q)
                raise StepError(f"{why}; its end-to-end runs are skipped")
            # The rest of the evaluation still runs, on data that says SYNTHETIC everywhere.
            cmd = ["make", "--no-print-directory", f"gen-{q}", "CARGO=true", f"GEN_DURATION={k.record_s}"]
            if evalproc.run(cmd, log, 600, cwd=REPO) != 0:
                self.failed_recordings.add(q)
                raise StepError(f"{why}; the SYNTHETIC fallback failed too; its end-to-end runs are skipped")
            raise StepError(f"{why}; a SYNTHETIC recording (replay gen) stands in, and the captions say so")
        stats = subprocess.run([os.path.join(REPO, "target", "release", "data-stats"), self.recording(q)],
                               capture_output=True, text=True)
        with open(log, "a") as f:
            f.write(stats.stdout)
        first = stats.stdout.splitlines()[:3]
        return "; ".join(line if line.startswith("batches") else line.split(": ", 1)[-1]
                         for line in first if line.startswith(("recording", "batches")))

    def _skip_missing(self, q):
        if q in self.failed_recordings or not os.path.exists(self.recording(q)):
            raise StepError(f"no recording {rel(self.recording(q))} (its record step failed or did not run)")

    def e2e_loom(self, q):
        self._skip_missing(q)
        k = self.k
        flags = f"--stop-after-connections 1 --query-interval-s {k.query_interval_s} --query-count {k.query_count}"
        self.endpoint_run(("e2e-mach-app", dict(QUERY=q, CARGO="true", LOOM_APP_FLAGS=flags)),
                          (q, dict(REPLAY_DURATION=k.replay_s, CARGO="true")),
                          self.out(f"replay-e2e-mach-{q}"), k.replay_s + 120)
        return summarize_app(self.out(f"e2e-mach-app-{q}"))

    def e2e_influx(self, q, complete):
        self._skip_missing(q)
        k = self.k
        target = "e2e-influx-app" if complete else "e2e-influx-app-dropped"
        log = self.out(f"{target}-{q}")
        flags = "" if complete else f"--query-interval-s {k.query_interval_s} --query-count {k.query_count}"
        replay_s = k.complete_replay_s if complete else k.replay_s
        timeout = replay_s + 120 + (RECORD_RATE.get(q, 200_000) * replay_s / INFLUX_POINTS_PER_S * 4 if complete else 0)
        self.make("influxd", 60)
        try:
            self.endpoint_run((target, dict(QUERY=q, CARGO="true", INFLUX_APP_FLAGS=flags)),
                              (q, dict(REPLAY_DURATION=replay_s, CARGO="true")),
                              self.out(f"replay-{target}-{q}"), timeout)
        finally:
            self.make("influxd-stop", 60, INFLUXD_CPU_LOG=log)
        return summarize_app(log)

    def pe_round(self, r):
        k = self.k
        common = dict(PE_DURATION=k.pe_duration_s, PE_WARMUP=k.pe_warmup_s, CARGO="true")
        run_s = k.pe_warmup_s + k.pe_duration_s + 120
        self.make("pe-ramdisk", 60)
        self.make("pe-rocksdb-noop", run_s, **common)
        for name, endpoint in (("file-writer", "pe-file-writer-app"), ("loom", "pe-loom-app")):
            self.endpoint_run((endpoint, dict(CARGO="true")), ("pe-rocksdb", dict(OUT_FILE=name, **common)),
                              self.log, run_s)
        self.make("influxd", 60)
        try:
            self.endpoint_run(("pe-influx-app", dict(CARGO="true")), ("pe-rocksdb", dict(OUT_FILE="influx", **common)),
                              self.log, run_s)
        finally:
            self.make("influxd-stop", 60, INFLUXD_CPU_LOG=self.out("pe-influx-app"))
        rates = {ep: last_average(self.out(f"pe-{ep}")) for ep in ("noop", "file-writer", "loom", "influx")}
        return ", ".join(f"{ep} {v / 1e3:.0f} k ops/s" if v else f"{ep} ?" for ep, v in rates.items())

    def valkey_pe_round(self, r):
        k = self.k
        for probes in ("none", "syscalls", "both"):
            self.make(f"valkey-pe-{probes}", k.valkey_pe_s + 120, VALKEY_PE_DURATION=k.valkey_pe_s,
                      VALKEY_PE_WARMUP=2, CARGO="true")
        rates = {p: last_average(self.out(f"valkey-pe-{p}")) for p in ("none", "syscalls", "both")}
        return ", ".join(f"{p} {v / 1e3:.1f} k req/s" if v else f"{p} ?" for p, v in rates.items())

    def ingest(self, size):
        k, failed = self.k, []
        for target, extra in IS_STORES:
            try:
                self.make(target, k.is_runs * (k.is_duration_s + 60) + 60, IS_NO_BUILD=1, SIZE=size,
                          RUNS=k.is_runs, DURATION=k.is_duration_s, TMP_DATA_DIR=k.tmp_data_dir, IS_OUT=k.eval_out,
                          **extra)
            except StepError as e:
                failed.append(f"{target}{extra.get('THREADS', '')}: {e}")
        if failed:
            raise StepError("; ".join(failed))
        return f"{len(IS_STORES)} stores"

    def recorded_rate(self, q):
        """Records/s of a recording, from the data-stats lines of its record log (else a typical rate)."""
        import re
        try:
            with open(self.out(f"record-{q}")) as f:
                m = re.search(r"^batches: .*?, (\d+(?:\.\d+)?) records/s", f.read(), re.M)
            return float(m.group(1)) if m else RECORD_RATE.get(q, 300_000)
        except OSError:
            return RECORD_RATE.get(q, 300_000)

    def ablation(self, lb):
        k = self.k
        # loom-app keeps 125 + lookback s of P2 data under tmp-data/ until it exits.
        need = self.recorded_rate("rocksdb-p2") * (125 + lb) * ABLATION_BYTES_PER_RECORD
        os.makedirs(os.path.join(REPO, "tmp-data"), exist_ok=True)
        free = shutil.disk_usage(os.path.join(REPO, "tmp-data")).free
        if free < need * 1.2:
            raise StepError(f"needs about {need * 1.2 / 1e9:.1f} GB free under tmp-data/ for {125 + lb} s of "
                            f"RocksDB P2 data, has {free / 1e9:.1f} GB; free disk space or drop this lookback "
                            f"(EVAL_AB_LOOKBACKS)")
        # Event time is stored, so the replay may run faster than recorded, up to the rate
        # loom-app ingests without dropping; it is not pinned here (the numbers are query
        # latencies after ingest stopped, and pinned to one core it dropped 5 % at 2 M/s).
        speed = self.ab_speed(self.recorded_rate("rocksdb-p2"))
        flags = f"--stop-after-connections 1 --timestamps event --query-count {k.ab_reps}"
        ingest_s = (125 + lb) / speed
        self.endpoint_run(("ab-mach-app", dict(QUERY=ABLATION_QUERY, AB_LOG="ablation-all", LOOKBACK=lb,
                                               LOOM_APP_FLAGS=flags, CARGO="true", E2E_PIN_APP="")),
                          ("rocksdb-p2", dict(REPLAY_DURATION=int(ingest_s * 4 + 600), REPLAY_SPEED=f"{speed:.2f}",
                                              CARGO="true")),
                          self.out(f"replay-ab-{lb}"), ingest_s * 4 + 600)
        log = self.out(f"ab-mach-ablation-all-{lb}")
        result = summarize_app(log)
        import logparse
        app, _ = logparse.parse_app_log(logparse.read_lines(log)[0])
        if (app.dropped_pct() or 0) > AB_MAX_DROPPED_PCT:
            raise StepError(f"loom-app dropped {app.dropped_pct():.1f} % of the replay at {speed:.2f}x, so the "
                            f"window holds less data than recorded; lower EVAL_AB_MAX_RATE ({result})")
        return f"replay at {speed:.2f}x; {result}"

    def ab_speed(self, rate):
        """EVAL_AB_SPEED, lowered so that the replay stays under EVAL_AB_MAX_RATE records/s."""
        return max(0.1, min(self.k.ab_speed, self.k.ab_max_rate / max(rate, 1.0)))

    def figures(self):
        out = subprocess.run(["make", "--no-print-directory", "figures", f"FIGURES_LOGS={self.k.eval_out}"],
                             cwd=REPO, capture_output=True, text=True, timeout=600)
        with open(self.log, "a") as f:
            f.write(out.stdout + out.stderr)
        if out.returncode != 0:
            raise StepError(f"make figures failed (status {out.returncode}); see {rel(self.log)}")
        drawn = [line for line in out.stdout.splitlines() if line.startswith("fig") and " -> " in line]
        return f"{len(drawn)} figure files drawn"

    # ---------------------------------------------------------------- run
    def archive_logs(self, families):
        """Moves the logs of the families about to run to EVAL_OUT/archive/<time>/ (never deleted)."""
        prefixes = tuple(p for f in families for p in FAMILY_LOGS.get(f, ()))
        if not prefixes or not os.path.isdir(self.k.eval_out):
            return 0
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        dest = os.path.join(self.k.eval_out, "archive", stamp)
        moved = 0
        for name in sorted(os.listdir(self.k.eval_out)):
            path = os.path.join(self.k.eval_out, name)
            if os.path.isfile(path) and name.startswith(prefixes):
                os.makedirs(dest, exist_ok=True)
                shutil.move(path, os.path.join(dest, name))
                moved += 1
        if moved:
            print(f"moved {moved} logs of an earlier run to {rel(dest)}")
        return moved

    def write_run_info(self, steps):
        k = self.k
        info = {
            "scale": k.scale,
            "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(),
            "cores": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "kernel": platform.release(),
            "cpu_model": cpu_model(),
            "knobs": {key: getattr(k, key) for key in k.__dataclass_fields__ if key not in ("eval_out",)},
            "steps": [s.name for s in steps],
        }
        os.makedirs(k.eval_out, exist_ok=True)
        with open(self.out("evaluate-run.json"), "w") as f:
            json.dump(info, f, indent=2)

    def run(self):
        k = self.k
        steps = self.steps()
        total = sum(s.expected_s for s in steps)
        os.makedirs(k.eval_out, exist_ok=True)
        # RocksDB (ingest scaling, the workload) keeps many files open.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 1 << 20)), hard))
        print(f"evaluate: scale {k.scale}, {len(steps)} steps, expected {fmt(total)} "
              f"(cores {os.cpu_count()}); output of the commands: {rel(self.log)}", flush=True)
        self.archive_logs([f for f in k.steps if f in FAMILY_LOGS])
        self.write_run_info(steps)
        with open(self.log, "a") as f:
            f.write(f"\n==== evaluate {k.scale} {datetime.datetime.now(datetime.timezone.utc).isoformat()}\n")
        expected_so_far = 0.0
        for i, s in enumerate(steps, 1):
            expected_so_far += s.expected_s
            with open(self.log, "a") as f:
                f.write(f"\n==== step {i}/{len(steps)}: {s.name}\n")
            t0 = time.monotonic()
            try:
                s.detail = s.action(**s.args) or ""
                s.status = "ok"
            except StepError as e:
                s.status, s.detail = "FAILED", str(e)
            except Exception as e:  # a bug in one step must not stop the others
                s.status, s.detail = "FAILED", f"{type(e).__name__}: {e}"
            s.took_s = time.monotonic() - t0
            elapsed = time.monotonic() - self.start
            print(f"[{i:2d}/{len(steps)}] {fmt(elapsed)} (expected {fmt(expected_so_far)}) {s.name}: {s.status} "
                  f"in {s.took_s:.0f} s (expected {s.expected_s:.0f} s){' - ' + s.detail if s.detail else ''}",
                  flush=True)
        failed = [s for s in steps if s.status != "ok"]
        print(f"\nevaluate: done in {fmt(time.monotonic() - self.start)} (expected {fmt(total)}); "
              f"{len(steps) - len(failed)} steps ok, {len(failed)} failed" + (":" if failed else ""))
        for s in failed:
            print(f"  FAILED {s.name}: {s.detail}")
        print()
        print_summary(k.eval_out)
        return 1 if failed else 0


def print_summary(eval_out):
    import keynumbers
    out = os.environ.get("FIGURES_OUT", "figures")
    fig_dir = os.path.join(out if os.path.isabs(out) else os.path.join(REPO, out), "figures")
    print(keynumbers.report(eval_out, fig_dir))


def main(argv):
    cmd = argv[1] if len(argv) > 1 else "run"
    if cmd not in ("run", "summary", "plan"):
        print(f"usage: {argv[0]} run|summary|plan", file=sys.stderr)
        return 2
    if cmd == "summary":
        print_summary(os.environ.get("EVAL_OUT", os.path.join(REPO, "evaluation-output")))
        return 0
    ev = Evaluation(Knobs.from_env())
    if cmd == "plan":
        total = 0.0
        for i, s in enumerate(ev.steps(), 1):
            total += s.expected_s
            print(f"[{i:2d}] {fmt(total)} {s.name} (expected {s.expected_s:.0f} s)")
        return 0
    # SIGINT is ignored in a job started in the background by a shell without job control;
    # take it back, and treat SIGTERM the same: stop what runs, stop influxd, exit.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return ev.run()
    except KeyboardInterrupt:
        print("\nevaluate: interrupted; stopping the running commands and influxd", flush=True)
        evalproc.stop_all()
        subprocess.call(["make", "--no-print-directory", "influxd-stop"], cwd=REPO,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv))
