#!/usr/bin/env python3
"""Soak benchmark (issue 25): loom-app under a steady mixed load for N minutes.

One loom-app (ports learned from its --ready-file, a store with retention)
takes at once:
  * a telemetry recording replayed over TCP at SPEED times its pace, looped
    (tcp-replay --speed --duration-s);
  * OTLP spans posted as OTLP/JSON over HTTP, SPANS_PER_S per second, at
    their own current times;
  * one InfluxQL statement per second (the statements rotate), timed.
Every 10 s it writes a row: loom-app's RSS, threads, open fds, records/s
ingested, records dropped and not stored so far, late, OTLP spans accepted,
query latency p50/p99 of the last 10 s and query errors; then a plot.

Exits non-zero (with the reason) when loom-app dies, a statement or an OTLP
post fails, the CSV has fewer rows than the run should give, or RSS passes
--max-rss-mb: the smoke test `make test` runs for 2 minutes. The flatness
figures of a long run (RSS growth after 5 minutes, p99 trend, drops) are
printed at the end as `SOAK-SUMMARY`.
"""

import argparse
import csv
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

STATEMENTS = [
    "SELECT max(duration_us), percentile(duration_us, 99.99) FROM kv WHERE time >= now() - 60s",
    "SELECT count(duration_us) FROM syscall WHERE name = 'pread64' AND time >= now() - 10s",
    "SELECT percentile(duration_us, 99) FROM span WHERE time >= now() - 5m",
    "SELECT count(duration_us) FROM kv WHERE time >= now() - 10s GROUP BY time(1s) fill(0)",
]


def log(msg):
    print(f"soak: {msg}", flush=True)


def proc_status(pid):
    """RSS (MB), threads, open fds and anonymous RSS (MB: the heap, as
    opposed to the mapped binary) of a live process; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        rss_kb = int(fields["VmRSS"].split()[0])
        anon_kb = int(fields["RssAnon"].split()[0])
        threads = int(fields["Threads"])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss_kb / 1024.0, threads, fds, anon_kb / 1024.0
    except (OSError, KeyError, ValueError):
        return None


class Progress:
    """The newest totals of loom-app's progress line, read from its stdout."""

    def __init__(self, stream, log_path):
        self.lock = threading.Lock()
        self.totals = {"received": 0, "dropped": 0, "not_stored": 0, "late": 0,
                       "index_mb": 0.0, "summary_pages_read": 0}
        self.final = []
        self.out = open(log_path, "w")
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for raw in stream:
            line = raw.decode("utf-8", "replace")
            self.out.write(line)
            self.out.flush()
            if line.startswith("Records received:"):
                self._parse(line)
            elif line.startswith("Memory: index held"):
                self._parse_memory(line)
            elif line.startswith("Final"):
                with self.lock:
                    self.final.append(line.strip())

    def _parse(self, line):
        # "..., total received N dropped D, not stored S, late L, ..."
        t = {}
        parts = [p.strip() for p in line.split(",")]
        for p in parts:
            w = p.split()
            if p.startswith("total received") and len(w) >= 5:
                t["received"], t["dropped"] = int(w[2]), int(w[4])
            elif p.startswith("not stored") and len(w) >= 3:
                t["not_stored"] = int(w[2])
            elif len(w) == 2 and w[0] == "late":
                # `late m` (refused); `late stored s` is not a loss.
                t["late"] = int(w[1])
        with self.lock:
            self.totals.update(t)

    def _parse_memory(self, line):
        # "Memory: index held H bytes (...), summary pages read L"
        w = line.split()
        try:
            t = {"index_mb": round(int(w[3]) / 2**20, 1), "summary_pages_read": int(w[-1])}
        except (IndexError, ValueError):
            return
        with self.lock:
            self.totals.update(t)

    def snapshot(self):
        with self.lock:
            return dict(self.totals)


class Queries(threading.Thread):
    """One statement per second; latencies (ms) and errors since last taken."""

    def __init__(self, http, stop):
        super().__init__(daemon=True)
        self.url = f"http://{http}/query"
        self.stop = stop
        self.lock = threading.Lock()
        self.latencies, self.errors, self.total_errors = [], 0, 0
        self.first_error = None

    def run(self):
        k = 0
        while not self.stop.is_set():
            q = STATEMENTS[k % len(STATEMENTS)]
            k += 1
            url = self.url + "?" + urllib.parse.urlencode({"db": "loom", "q": q})
            t = time.perf_counter()
            ok, why = True, None
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    body = json.loads(r.read())
                for res in body.get("results", []):
                    if "error" in res:
                        ok, why = False, f"{q}: {res['error']}"
            except (OSError, ValueError) as e:
                ok, why = False, f"{q}: {e}"
            ms = (time.perf_counter() - t) * 1e3
            with self.lock:
                if ok:
                    self.latencies.append(ms)
                else:
                    self.errors += 1
                    self.total_errors += 1
                    self.first_error = self.first_error or why
            self.stop.wait(max(0.0, 1.0 - ms / 1e3))

    def take(self):
        with self.lock:
            lat, err = self.latencies, self.errors
            self.latencies, self.errors = [], 0
        return lat, err


class Spans(threading.Thread):
    """OTLP/JSON spans at their own current times, `rate` per second."""

    def __init__(self, otlp_http, rate, stop):
        super().__init__(daemon=True)
        self.url = f"http://{otlp_http}/v1/traces"
        self.rate, self.stop = rate, stop
        self.accepted, self.failed, self.first_error = 0, 0, None
        self.rng = random.Random(25)

    def body(self, now_ns, n):
        spans = []
        for i in range(n):
            start = now_ns - (n - i) * (1_000_000_000 // max(n, 1))
            d = int(self.rng.paretovariate(1.5) * 200_000)
            spans.append({
                "traceId": "%032x" % self.rng.getrandbits(128),
                "spanId": "%016x" % self.rng.getrandbits(64),
                "name": ["GET /cart", "POST /pay", "db.query", "cache.get"][i % 4],
                "kind": 2,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + d),
                "attributes": [{"key": "http.route", "value": {"stringValue": "/cart"}}],
            })
        return json.dumps({"resourceSpans": [{
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "soak"}},
                {"key": "host.name", "value": {"stringValue": "soak-host"}}]},
            "scopeSpans": [{"scope": {"name": "soak"}, "spans": spans}],
        }]}).encode()

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            req = urllib.request.Request(
                self.url, data=self.body(time.time_ns(), self.rate),
                headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=15) as r:
                    r.read()
                self.accepted += self.rate
            except (OSError, ValueError) as e:
                self.failed += 1
                self.first_error = self.first_error or str(e)
            self.stop.wait(max(0.0, 1.0 - (time.monotonic() - t)))


def pct(values, q):
    if not values:
        return ""
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 2)


def start_app(args, store, ready):
    cmd = [os.path.join(args.bin, "loom-app"), "--loom-path", store, "--addr", "127.0.0.1:0",
           "--http", "127.0.0.1:0", "--otlp-grpc", "off", "--otlp-http", "127.0.0.1:0",
           "--ready-file", ready, "--report-interval-s", "10",
           "--retention-bytes", str(args.retention_bytes)] + args.app_flag
    log("starting " + " ".join(cmd))
    app = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while not os.path.exists(ready):
        if app.poll() is not None or time.time() > deadline:
            out = app.stdout.read().decode("utf-8", "replace")[-2000:]
            sys.exit(f"soak: loom-app did not start:\n{out}")
        time.sleep(0.1)
    with open(ready) as f:
        return app, json.load(f)


def plot(rows, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = [r["t_s"] / 60 for r in rows]
    fig, ax = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    ax[0].plot(t, [r["rss_mb"] for r in rows], label="RSS")
    ax[0].plot(t, [r["index_mb"] for r in rows], label="engine index")
    ax[0].set_ylabel("MB")
    ax[0].legend()
    ax[1].plot(t, [r["threads"] for r in rows], label="threads")
    ax[1].plot(t, [r["fds"] for r in rows], label="open fds")
    ax[1].legend()
    ax[2].plot(t, [r["ingest_rec_s"] / 1e6 for r in rows])
    ax[2].set_ylabel("M records/s")
    p50 = [r["query_p50_ms"] if r["query_p50_ms"] != "" else None for r in rows]
    p99 = [r["query_p99_ms"] if r["query_p99_ms"] != "" else None for r in rows]
    ax[3].plot(t, p50, label="p50")
    ax[3].plot(t, p99, label="p99")
    ax[3].set_ylabel("query ms")
    ax[3].legend()
    ax[3].set_xlabel("minutes")
    drops = rows[-1]["dropped"] if rows else 0
    fig.suptitle(f"loom-app soak: {len(rows)} samples, {drops} records dropped")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def summary(rows):
    """Flatness of a run: RSS growth after the first 5 minutes (or the first
    third of a short run), query p99 in the first and last quarter."""
    if len(rows) < 4:
        return "too few samples"
    settle = 300 if rows[-1]["t_s"] > 900 else rows[-1]["t_s"] / 3
    after = [r for r in rows if r["t_s"] >= settle]
    base = after[0]["rss_mb"]
    growth = (max(r["rss_mb"] for r in after) - base) / base * 100
    # The trend, robust to the sample-to-sample swing of an allocator that
    # gives memory back (jemalloc: +-15 % every 10 s): the median RSS of the
    # last quarter of the settled run against that of its first quarter.
    qa = max(1, len(after) // 4)
    first_q = statistics.median(r["rss_mb"] for r in after[:qa])
    trend = (statistics.median(r["rss_mb"] for r in after[-qa:]) - first_q) / first_q * 100
    # And the least-squares line through every settled sample: its rise
    # over the settled run against its value where the run settled.
    xs, ys = [r["t_s"] for r in after], [r["rss_mb"] for r in after]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs) or 1.0
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    at_settle = my + slope * (xs[0] - mx)
    fit = slope * (xs[-1] - xs[0]) / at_settle * 100 if at_settle > 0 else 0.0
    q = max(1, len(rows) // 4)
    p99 = lambda rs: statistics.median([r["query_p99_ms"] for r in rs if r["query_p99_ms"] != ""] or [0])
    return (f"minutes={rows[-1]['t_s'] / 60:.1f} rss_mb_after_settle={base:.0f} "
            f"rss_growth_pct={growth:.1f} rss_trend_pct={trend:.1f} rss_fit_growth_pct={fit:.1f} "
            f"max_rss_mb={max(r['rss_mb'] for r in rows):.0f} "
            f"max_threads={max(r['threads'] for r in rows)} max_fds={max(r['fds'] for r in rows)} "
            f"dropped={rows[-1]['dropped']} not_stored={rows[-1]['not_stored']} "
            f"index_mb_after_settle={after[0]['index_mb']:.0f} index_mb_last={rows[-1]['index_mb']:.0f} "
            f"summary_pages_read={rows[-1]['summary_pages_read']} "
            f"query_p99_ms_first_quarter={p99(rows[:q]):.1f} query_p99_ms_last_quarter={p99(rows[-q:]):.1f} "
            f"mean_ingest_rec_s={statistics.mean(r['ingest_rec_s'] for r in rows[1:]):.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--recording", required=True)
    ap.add_argument("--speed", type=float, default=3.0)
    ap.add_argument("--spans-per-s", type=int, default=2000)
    ap.add_argument("--retention-bytes", type=int, default=2 << 30)
    ap.add_argument("--max-rss-mb", type=float, default=2048)
    ap.add_argument("--bin", default="target/release")
    ap.add_argument("--work", required=True, help="scratch folder (store, logs)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--app-flag", action="append", default=[], help="extra loom-app flag")
    args = ap.parse_args()

    os.makedirs(args.work, exist_ok=True)
    for p in (args.csv, args.png):
        os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
    store, ready = os.path.join(args.work, "store"), os.path.join(args.work, "ready.json")
    subprocess.run(["rm", "-rf", store, ready], check=True)
    app, ports = start_app(args, store, ready)
    progress = Progress(app.stdout, os.path.join(args.work, "loom-app.log"))
    seconds = int(args.minutes * 60)
    replay_log = open(os.path.join(args.work, "tcp-replay.log"), "w")
    replay = subprocess.Popen(
        [os.path.join(args.bin, "tcp-replay"), "--file-path", args.recording, "--addr", ports["tcp"],
         "--speed", str(args.speed), "--duration-s", str(seconds)],
        stdout=replay_log, stderr=subprocess.STDOUT)
    stop = threading.Event()
    queries, spans = Queries(ports["http"], stop), Spans(ports["otlp_http"], args.spans_per_s, stop)
    queries.start()
    spans.start()
    log(f"{args.minutes} min: {args.recording} at {args.speed}x, {args.spans_per_s} spans/s, "
        f"1 statement/s, retention {args.retention_bytes} bytes; pid {ports['pid']}")

    rows, failure = [], None
    fields = ["t_s", "rss_mb", "threads", "fds", "ingest_rec_s", "received", "dropped",
              "not_stored", "late", "spans_accepted", "query_p50_ms", "query_p99_ms",
              "query_errors", "rss_anon_mb", "index_mb", "summary_pages_read"]
    start = time.monotonic()
    last_received = 0
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        k = 0
        while time.monotonic() - start < seconds:
            k += 1
            time.sleep(max(0.0, start + 10 * k - time.monotonic()))
            st = proc_status(ports["pid"])
            if st is None or app.poll() is not None:
                failure = "loom-app died"
                break
            tot = progress.snapshot()
            lat, qerr = queries.take()
            row = {"t_s": round(time.monotonic() - start, 1), "rss_mb": round(st[0], 1),
                   "threads": st[1], "fds": st[2], "rss_anon_mb": round(st[3], 1),
                   "ingest_rec_s": (tot["received"] - last_received) / 10.0,
                   "spans_accepted": spans.accepted, "query_p50_ms": pct(lat, 0.5),
                   "query_p99_ms": pct(lat, 0.99), "query_errors": qerr, **tot}
            last_received = tot["received"]
            rows.append(row)
            w.writerow(row)
            f.flush()
            log(" ".join(f"{k}={v}" for k, v in row.items()))
            if st[0] > args.max_rss_mb:
                failure = f"RSS {st[0]:.0f} MB over --max-rss-mb {args.max_rss_mb}"
                break
    stop.set()
    replay.terminate()
    replay.wait()
    if app.poll() is None:
        app.send_signal(signal.SIGINT)
        try:
            app.wait(timeout=120)
        except subprocess.TimeoutExpired:
            app.kill()
            failure = failure or "loom-app did not stop within 120 s of SIGINT"
    time.sleep(0.5)
    plot(rows, args.png)
    log(f"wrote {args.csv} and {args.png}")
    for line in progress.final:
        log(line)
    print("SOAK-SUMMARY " + summary(rows), flush=True)
    want = int(seconds / 10) - 1
    if not failure and len(rows) < want:
        failure = f"{len(rows)} samples, expected at least {want}"
    if not failure and queries.total_errors:
        failure = f"{queries.total_errors} statements failed, first: {queries.first_error}"
    if not failure and spans.failed:
        failure = f"{spans.failed} OTLP posts failed, first: {spans.first_error}"
    if not failure and app.returncode not in (0, None):
        failure = f"loom-app exited with {app.returncode}"
    if not failure and not progress.final:
        failure = "loom-app printed no Final line"
    if failure:
        sys.exit(f"soak: FAILED: {failure} (logs in {args.work})")
    log("ok")


if __name__ == "__main__":
    main()
