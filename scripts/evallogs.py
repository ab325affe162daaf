"""Small readers of scripts/evaluate.py: paths and times for its lines, machine facts,
and the one-line result of a step from its log (through figures/logparse.py)."""

import os
import platform
import sys

from evalproc import StepError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "figures"))


def rel(path):
    p = os.path.abspath(path)
    return os.path.relpath(p, REPO) if p.startswith(REPO + os.sep) else p


def fmt(seconds):
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def read_dd(path):
    import logparse
    lines, _ = logparse.read_lines(path)
    return logparse.parse_dd_log(lines, path)[0]


def last_average(path):
    import logparse
    lines, _ = logparse.read_lines(path)
    runs, _ = logparse.parse_workload_log(lines, path)
    return runs[-1].ops_per_s if runs else None


def summarize_app(path):
    """Short result of an endpoint log: records, % dropped, query latencies.

    StepError when the log has no `Final:` line or every query failed: the step did not work."""
    import logparse
    lines, _ = logparse.read_lines(path)
    app, _ = logparse.parse_app_log(lines, path)
    if not app.final:
        raise StepError(f"{rel(path)} has no `Final:` line: the endpoint did not finish")
    if app.failed and not app.queries:
        raise StepError(f"every query failed, e.g. {app.failed[0][1][:160]} (see {rel(path)})")
    rec, drop = app.totals()
    parts = []
    if rec is not None:
        parts.append(f"{rec / 1e6:.2f} M records, {app.dropped_pct() or 0:.1f} % dropped")
    if app.queries:
        lat = ", ".join(f"{q.latency_ms:.1f}" for q in app.queries[:8])
        parts.append(f"{len(app.queries)} queries: {lat}{' ...' if len(app.queries) > 8 else ''} ms")
    if app.failed:
        parts.append(f"{len(app.failed)} queries failed")
    return "; ".join(parts) or "no records or queries in the log"
