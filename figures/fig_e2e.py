"""Figures 10-12, end to end: query latency and % records dropped per workload phase.

Reads evaluation-output/e2e-<system>-app-<query> (loom-app output teed by
`make e2e-mach-app QUERY=<query>` while `make <query>` replays a recording).
Writes figures/data/e2e-queries.csv (every answered query),
figures/data/e2e-dropped.csv (received/dropped per log) and one figure per
workload: figures/figures/fig10-12-e2e-<workload>.{png,pdf}.
FishStore's published figures are not redrawn here (its code is not part of
this project).
"""

import os
import sys
from collections import defaultdict

import logparse
from plotutil import Result, errbars, log_y_if_positive, note, out_dirs, plt, rel, run_one, save, summary, warn, write_csv

FIG, TITLE = "fig10-12", "end to end"
SYSTEMS = {"mach": "Loom", "loom": "Loom", "influx": "InfluxDB", "fishstore": "FishStore"}
PHASE_TEXT = {
    ("rocksdb", 1): "P1\nKV read max, p99.99",
    ("rocksdb", 2): "P2\npread64 max, p99.99",
    ("rocksdb", 3): "P3\npage-cache count",
    ("valkey", 1): "P1\nslow KV reads",
    ("valkey", 2): "P2\nslow reads, sendto/write",
    ("valkey", 3): "P3\nslowest read, packets ±5 s",
}


def system_label(system):
    return SYSTEMS.get(system, system)


def collect(log_dir):
    """(queries, dropped, interval series, warnings) from e2e-* logs.

    queries: (system, workload, phase, query, QueryResult, log)
    dropped: (system, workload, phase, received, dropped, pct, source, n intervals, log)
    series:  {(workload, system, phase): [% dropped per interval]}
    """
    queries, dropped, series, warnings = [], [], {}, []
    for name in logparse.list_logs(log_dir, "e2e-"):
        path = os.path.join(log_dir, name)
        m = logparse.E2E_LOG_NAME.match(name)
        if not m:
            warnings.append(f"{rel(path)}: name is not e2e-<system>-app-<query>; ignored")
            continue
        lines, w = logparse.read_lines(path)
        warnings += w
        app, w = logparse.parse_app_log(lines, rel(path))
        warnings += w
        system = m["system"]
        for q in app.queries:
            wp = logparse.phase_of(q.name)
            if wp is None:
                warnings.append(f"{rel(path)}:{q.line}: query {q.name} is not <workload>-p<n>; ignored")
                continue
            queries.append((system, wp[0], wp[1], q.name, q, rel(path)))
        wp = logparse.phase_of(m["query"])
        received, drop = app.totals()
        if wp is None:
            if received is not None:
                warnings.append(f"{rel(path)}: log of several queries; its drop counts are not assigned to a phase")
            continue
        if received is None:
            warnings.append(f"{rel(path)}: no `Records received` or `Final` line yet")
            continue
        source = "Final line" if app.final else ("running totals" if app.total_received is not None else "sum of intervals")
        dropped.append((system, wp[0], wp[1], received, drop, app.dropped_pct(), source, len(app.intervals), rel(path)))
        series[(wp[0], system, wp[1])] = [100.0 * d / r if r else 0.0 for r, d in app.intervals]
    return queries, dropped, series, warnings


def draw(workload, queries, dropped, series, out):
    """One figure for `workload`; returns the PNG path."""
    systems = sorted({q[0] for q in queries} | {d[0] for d in dropped})
    phases = sorted({q[2] for q in queries} | {d[2] for d in dropped})
    width = 0.8 / max(1, len(systems))
    fig, (ax_q, ax_d, ax_t) = plt.subplots(1, 3, figsize=(14, 4.2))

    lat = defaultdict(list)
    for system, _, phase, _, q, _ in queries:
        lat[(system, phase)].append(q.latency_ms)
    drop = {(d[0], d[2]): d[5] for d in dropped}
    for k, system in enumerate(systems):
        color = f"C{k}"
        xs, med, lo, hi = [], [], [], []
        for i, p in enumerate(phases):
            if lat.get((system, p)):
                m, a, b, _ = summary(lat[(system, p)])
                xs.append(i + (k - (len(systems) - 1) / 2) * width)
                med.append(m), lo.append(a), hi.append(b)
        if xs:
            ax_q.bar(xs, med, width, yerr=errbars(med, lo, hi), capsize=3, color=color, label=system_label(system))
        xs = [i + (k - (len(systems) - 1) / 2) * width for i, p in enumerate(phases) if drop.get((system, p)) is not None]
        vals = [drop[(system, p)] for p in phases if drop.get((system, p)) is not None]
        if xs:
            bars = ax_d.bar(xs, vals, width, color=color, label=system_label(system))
            ax_d.bar_label(bars, [f"{v:.2f} %" for v in vals], fontsize=7)
    labels = [PHASE_TEXT.get((workload, p), f"P{p}") for p in phases]
    for ax in (ax_q, ax_d):
        ax.set_xticks(range(len(phases)), labels, fontsize=8)
        ax.set_xlabel("phase (query)")
        ax.grid(True, axis="y", alpha=0.3)
    ax_q.set_ylabel("query latency (ms)")
    ax_q.set_title("query latency, median of rounds (bars min-max)")
    every = [x for v in lat.values() for x in v]
    if every and min(every) > 0 and max(every) > 50 * min(every) and log_y_if_positive(ax_q, every):
        ax_q.set_ylabel("query latency (ms, log scale)")
    if not lat:
        note(ax_q, "no answered queries in the logs yet")
    ax_d.set_ylabel("records dropped (% of received)")
    ax_d.set_title("telemetry dropped by the endpoint")
    top = max([v for v in drop.values() if v is not None], default=0)
    ax_d.set_ylim(bottom=0, top=top * 1.3 if top > 0 else 1.0)

    for (wl, system, p), pct in sorted(series.items()):
        if wl == workload and pct:
            ax_t.plot(range(1, len(pct) + 1), pct, marker=".", label=f"{system_label(system)} P{p}")
    ax_t.set_xlabel("report interval (loom-app --report-interval-s, default 10 s)")
    ax_t.set_ylabel("records dropped (% of received in interval)")
    ax_t.set_title("drops over time")
    ax_t.set_ylim(bottom=0)
    ax_t.grid(True, alpha=0.3)
    for ax in (ax_q, ax_d, ax_t):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.suptitle(f"Fig. 10-12 - End to end: {workload} recording replayed into the endpoint (measured)")
    fig.tight_layout()
    return save(fig, out, f"fig10-12-e2e-{workload}")


def build(log_dir, out):
    queries, dropped, series, warnings = collect(log_dir)
    for w in warnings:
        warn(w)
    data_dir, _ = out_dirs(out)
    if not queries and not dropped:
        return [Result(FIG, TITLE, False,
                       f"no {rel(log_dir)}/e2e-* logs with query latencies or drop counts; run "
                       "make e2e-mach-app QUERY=rocksdb-p1 and, in another terminal, make rocksdb-p1 "
                       "(make gen-rocksdb-p1 first for a synthetic recording)")]
    write_csv(os.path.join(data_dir, "e2e-queries.csv"),
              ["system", "workload", "phase", "query", "latency_ms", "log", "line"],
              [(s, w, p, n, q.latency_ms, log, q.line) for s, w, p, n, q, log in queries])
    write_csv(os.path.join(data_dir, "e2e-dropped.csv"),
              ["system", "workload", "phase", "received", "dropped", "dropped_pct", "counts_from", "intervals", "log"],
              dropped)
    results = []
    for workload in sorted({q[1] for q in queries} | {d[1] for d in dropped}):
        qs = [q for q in queries if q[1] == workload]
        ds = [d for d in dropped if d[1] == workload]
        png = draw(workload, qs, ds, series, out)
        phases = sorted({q[2] for q in qs} | {d[2] for d in ds})
        systems = sorted({system_label(q[0]) for q in qs} | {system_label(d[0]) for d in ds})
        detail = (f"{workload} {', '.join(f'P{p}' for p in phases)} x {'/'.join(systems)}, "
                  f"{len(qs)} query latenc{'ies' if len(qs) != 1 else 'y'}, drop counts from {len(ds)} log{'s' if len(ds) != 1 else ''}")
        results.append(Result(FIG, f"{TITLE} {workload}", True, detail, png))
    return results


def main(argv=None):
    return run_one(build, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
