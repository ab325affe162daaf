"""The key numbers of a run next to the published ones, as a Markdown table, and
which figures have data. Printed at the end of `make evaluate-small` and by
`make evaluate-summary`; the key-numbers table of docs/results.md and docs/reproduce.md has this shape.

    python3 figures/keynumbers.py [--logs evaluation-output] [--figures figures/figures]

Stdlib only (scripts/evaluate.py runs it with the system Python).
"""

import argparse
import os
import statistics
import sys
from collections import defaultdict

import logparse
import published as pub
from runinfo import RunInfo

HERE = os.path.dirname(os.path.abspath(__file__))
# Figure files of make_figures.py, in figure order, with what draws them.
FIGURES = [
    ("fig10-e2e-rocksdb", "fig10 end to end, RocksDB"),
    ("fig11-e2e-valkey", "fig11 end to end, Valkey"),
    ("fig12-e2e-dropped", "fig12 end to end, % dropped"),
    ("fig13-probe-effect", "fig13 probe effect"),
    ("fig14-ingest-scaling", "fig14 ingest scaling"),
    ("fig15-ablation", "fig15 ablation"),
    ("fig16-exact-match", "fig16 time + range vs lookback"),
]
SYSTEM_NAMES = {"mach": "Loom", "loom": "Loom", "influx-dropped": "InfluxDB", "influx": "Influx-complete"}
IS_STORES = [("loom", 1, "Loom"), ("loom-index", 1, "Loom + range index"), ("lmdb", 1, "LMDB"),
             ("rocksdb", 1, "RocksDB, 1 thread"), ("rocksdb", 2, "RocksDB, 2 threads"), ("file", 1, "raw file")]


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _rate(v):
    if v is None:
        return "-"
    return f"{v / 1e6:.2f} M" if v >= 1e6 else f"{v / 1e3:.0f} k"


def _ms(v):
    if v is None:
        return "-"
    return f"{v / 1e3:.2f} s" if v >= 1000 else f"{v:.1f} ms"


def _logs(log_dir, prefix):
    for name in logparse.list_logs(log_dir, prefix):
        path = os.path.join(log_dir, name)
        lines, _ = logparse.read_lines(path)
        yield name, lines


def ingest_rows(log_dir):
    runs = []
    for name, lines in _logs(log_dir, "is-"):
        if name not in logparse.IS_NOT_RESULT_LOGS and not name.endswith(".md"):
            runs += logparse.parse_ingest_log(lines, name)[0]
    groups = defaultdict(list)
    for r in runs:
        groups[(r.db, r.threads, r.size)].append(r)
    sizes = sorted({s for _, _, s in groups})
    rows = []
    for db, threads, label in IS_STORES:
        cells = []
        for s in sizes:
            rs = groups.get((db, threads, s))
            if rs:
                rps = _median([r.records_per_s for r in rs])
                mbs = _median([r.mb_per_s for r in rs])
                cells.append(f"{s} B {_rate(rps)} ({mbs:.0f} MB/s)")
        if cells:
            published = ("; ".join(f"{s} B {_rate(v)}" for s, v in pub.INGEST_RPS.items()) if db == "loom" else "-")
            rows.append(("14", f"ingest, {label} (records/s, payload MB/s)", "; ".join(cells), published))
    return rows


def probe_rows(log_dir):
    ops = defaultdict(list)
    for name, lines in _logs(log_dir, "pe-"):
        ep = logparse.pe_endpoint(name)
        if ep:
            ops[ep] += [r.ops_per_s for r in logparse.parse_workload_log(lines, name)[0]]
    cpu = defaultdict(list)
    for name, lines in _logs(log_dir, "pe-"):
        ep = logparse.pe_endpoint_app(name)
        if ep:
            cpu[ep] += [r.cpu_s_per_m_records() for r in logparse.parse_endpoint_log(lines, name)[0]]
    rows = []
    noop = _median(ops.get("noop", []))
    if noop:
        rows.append(("13", "RocksDB P3 with probes, noop endpoint (ops/s, median)",
                     f"{_rate(noop)} ({len(ops['noop'])} runs)", _rate(pub.PROBE_EFFECT_NOOP_OPS)))
    names = {"file-writer": "raw file", "loom": "Loom", "influx": "InfluxDB"}
    for ep, label in names.items():
        if ops.get(ep) and noop:
            med = _median(ops[ep])
            lo, hi = min(ops[ep]), max(ops[ep])
            rows.append(("13", f"probe effect, {label} endpoint (throughput lost vs noop; runs min..max)",
                         f"{100 - 100 * med / noop:.1f} % ({100 - 100 * hi / noop:.1f} .. {100 - 100 * lo / noop:.1f} %, "
                         f"{len(ops[ep])} runs)", f"{100 - pub.PROBE_EFFECT_PCT[ep]:.1f} %"))
    rows.append(("13", "probe effect, FishStore endpoint", "not run (no package)",
                 f"{100 - pub.PROBE_EFFECT_PCT['fishstore']:.1f} % ({pub.FISHSTORE_LABEL})"))
    for ep, label in names.items():
        per_m = _median(cpu.get(ep, []))
        if per_m is not None:
            what = "influx-app + influxd" if ep == "influx" else label
            rows.append(("13", f"endpoint CPU s per M records, {label} ({what}; median)",
                         f"{per_m:.3f} s ({len(cpu[ep])} runs)", "not published"))
    valkey = {}
    for name, lines in _logs(log_dir, "valkey-pe-"):
        m = logparse.VALKEY_PE_LOG_NAME.match(name)
        if m:
            valkey[m["probes"]] = _median([r.ops_per_s for r in logparse.parse_workload_log(lines, name)[0]])
    if valkey.get("none"):
        base = valkey["none"]
        cells = [f"none {_rate(base)} req/s"] + [
            f"{p} {100 * valkey[p] / base:.1f} % of none" for p in ("syscalls", "both") if valkey.get(p)]
        rows.append(("13", "Valkey requests/s with probes (none / syscall / syscall + packet)", "; ".join(cells),
                     "not published"))
    return rows


def e2e_rows(log_dir):
    lat, drop = defaultdict(list), {}
    for name, lines in _logs(log_dir, "e2e-"):
        sq = logparse.e2e_log(name)
        if not sq:
            continue
        app, _ = logparse.parse_app_log(lines, name)
        for q in app.queries:
            wp = logparse.phase_of(q.name)
            if wp:
                lat[(sq[0], wp)].append(q.latency_ms)
        wp = logparse.phase_of(sq[1])
        if wp and app.dropped_pct() is not None:
            drop[(sq[0], wp)] = app.dropped_pct()
    rows = []
    keys = sorted({k[1] for k in lat} | {k[1] for k in drop})
    fig = {"rocksdb": "10", "valkey": "11"}
    for wl, ph in keys:
        cells = [f"{SYSTEM_NAMES.get(s, s)} {_ms(_median(lat[(s, (wl, ph))]))}"
                 for s in ("mach", "influx-dropped", "influx") if lat.get((s, (wl, ph)))]
        published = [f"{SYSTEM_NAMES[s]} {pub.fmt_latency(pub.E2E_LATENCY_S[(s2, wl, ph)])}"
                     for s, s2 in (("mach", "loom"), ("influx", "influx")) if (s2, wl, ph) in pub.E2E_LATENCY_S]
        if cells:
            rows.append((fig.get(wl, "10-11"), f"{wl} P{ph} query latency (median of rounds)", "; ".join(cells),
                         "; ".join(published) or "-"))
    for wl, ph in keys:
        cells = [f"{SYSTEM_NAMES.get(s, s)} {drop[(s, (wl, ph))]:.1f} %"
                 for s in ("mach", "influx-dropped", "influx") if (s, (wl, ph)) in drop]
        p = pub.E2E_INFLUX_DROPPED_PCT.get(wl)
        if cells:
            rows.append(("12", f"{wl} P{ph} records dropped", "; ".join(cells),
                         f"InfluxDB {p[0]:g}-{p[1]:g} % (P1-P3)" if p else "-"))
    return rows


def ablation_rows(log_dir):
    lat = defaultdict(list)
    for name, lines in _logs(log_dir, "ab-"):
        m = logparse.AB_LOG_NAME.match(name)
        if not m:
            continue
        app, _ = logparse.parse_app_log(lines, name, default_lookback=int(m["lookback"]))
        for q in app.queries:
            mode = logparse.ablation_mode(q.name)
            if mode:
                lat[(mode, q.lookback_s)].append(q.latency_ms)
    rows = []
    for mode, label, published in (
            ("noindex", "no index", f"{pub.NOINDEX_QUERY_S[0]:g}-{pub.NOINDEX_QUERY_S[1]:g} s"),
            ("onlytime", "time index only", "-"), ("onlyrange", "range index only", "-"),
            ("timerange", "time + range index", f"~{pub.TIMERANGE_QUERY_S:g} s at every lookback")):
        lbs = sorted(lb for md, lb in lat if md == mode)
        if lbs:
            cells = "; ".join(f"{lb} s: {_ms(_median(lat[(mode, lb)]))}" for lb in lbs)
            rows.append(("15" if mode != "timerange" else "15-16", f"ablation {label}, by lookback", cells, published))
    return rows


def figures_section(fig_dir, run_started):
    """One line per figure: drawn, drawn before this run started (`run_started`, a file time), or missing."""
    lines = []
    for stem, title in FIGURES:
        png = os.path.join(fig_dir, stem + ".png")
        if os.path.exists(png) and run_started and os.path.getmtime(png) < run_started:
            lines.append(f"  {title}: NOT REDRAWN by this run (the file is older; run make figures)")
        elif os.path.exists(png):
            lines.append(f"  {title}: drawn -> {os.path.relpath(png, os.path.dirname(HERE))}")
        else:
            lines.append(f"  {title}: NO DATA (not drawn; `make figures` says which target makes its logs)")
    return lines


def table(log_dir):
    """Markdown table rows: figure | measurement | this machine | published."""
    rows = []
    info = RunInfo(log_dir)
    if info.dd_mb_s:
        rows.append(("14", "disk write bandwidth (dd, direct I/O)", f"{info.dd_mb_s:.0f} MB/s", "NVMe (not given)"))
    for part in (e2e_rows, probe_rows, ingest_rows, ablation_rows):
        rows += part(log_dir)
    out = ["| fig | measurement | this machine | published (64-core server) |", "| --- | --- | --- | --- |"]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return out, info


def report(log_dir, fig_dir):
    rows, info = table(log_dir)
    run_file = os.path.join(log_dir, "evaluate-run.json")
    started = os.path.getmtime(run_file) if os.path.exists(run_file) else None
    text = ["Figures:"] + figures_section(fig_dir, started)
    text += ["", f"Key numbers ({info.machine()}; {info.scale()}; measured vs published, never merged):", ""]
    text += rows
    if len(rows) == 2:
        text.append("| - | no results in the logs yet | - | - |")
    return "\n".join(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--logs", default=os.path.join(os.path.dirname(HERE), "evaluation-output"))
    p.add_argument("--figures", default=os.path.join(HERE, "figures"))
    a = p.parse_args(argv)
    print(report(a.logs, a.figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
