"""Figures 10-12, end to end: query latency per system over the repeated queries, and % dropped.

Reads evaluation-output/e2e-mach-app-<query> (loom-app, `make e2e-mach-app`),
e2e-influx-app-dropped-<query> (influx-app dropping batches when writes fall behind,
the published "InfluxDB", `make e2e-influx-app-dropped`) and e2e-influx-app-<query>
(influx-app --complete-data, "Influx-complete": everything written, asked once,
`make e2e-influx-app`), while `make <query>` replays a recording.
Writes figures/data/e2e-queries.csv, e2e-dropped.csv and
figures/figures/fig10-e2e-rocksdb, fig11-e2e-valkey, fig12-e2e-dropped (.png, .pdf).
FishStore's end-to-end results exist only in the paper (its code is not part of this project).
"""

import os
import sys
from collections import defaultdict

import logparse
import published
from plotutil import Result, add_caption, note, out_dirs, plt, rel, run_one, save, warn, write_csv
from runinfo import RunInfo

FIG, TITLE = "fig10-12", "end to end"
# system key of logparse.e2e_log -> (label, colour, marker)
SYSTEMS = {
    "mach": ("Loom", "C0", "o"),
    "loom": ("Loom", "C0", "o"),
    "influx-dropped": ("InfluxDB (drops when behind)", "C3", "s"),
    "influx": ("Influx-complete (all written, asked once)", "C2", "^"),
}
# Systems with published latencies. The published InfluxDB latency was measured with
# every point written before the one query (the artifact's e2e-influx-app is the
# complete-data endpoint), so it belongs beside Influx-complete.
PUBLISHED_SYSTEM = {"mach": "loom", "loom": "loom", "influx": "influx"}
WORKLOAD_FIG = {"rocksdb": ("fig10", "fig10-e2e-rocksdb"), "valkey": ("fig11", "fig11-e2e-valkey")}
PHASE_TEXT = {
    ("rocksdb", 1): "P1: KV read max, p99.99",
    ("rocksdb", 2): "P2: pread64 max, p99.99",
    ("rocksdb", 3): "P3: page-cache count",
    ("valkey", 1): "P1: slow KV reads",
    ("valkey", 2): "P2: slow reads, write/sendto",
    ("valkey", 3): "P3: slowest read, packets ±5 s",
}


def label(system):
    return SYSTEMS.get(system, (system,))[0]


def order(systems):
    known = list(SYSTEMS)
    return sorted(systems, key=lambda s: (known.index(s) if s in known else 99, s))


def collect(log_dir):
    """(queries, dropped, warnings).

    queries: (system, workload, phase, query, round, latency_ms, log, line)
    dropped: (system, workload, phase, received, dropped, pct, counts_from, complete, log)
    """
    queries, dropped, warnings = [], [], []
    for name in logparse.list_logs(log_dir, "e2e-"):
        path = os.path.join(log_dir, name)
        sq = logparse.e2e_log(name)
        if not sq:
            warnings.append(f"{rel(path)}: name is not e2e-<system>-app-<query> or e2e-influx-app-dropped-<query>; ignored")
            continue
        system, query = sq
        lines, w = logparse.read_lines(path)
        warnings += w
        app, w = logparse.parse_app_log(lines, rel(path))
        warnings += w
        t = logparse.truncation_warning(lines, rel(path), app)
        if t:
            warnings.append(t)
        rounds = defaultdict(int)
        for q in app.queries:
            wp = logparse.phase_of(q.name)
            if wp is None:
                warnings.append(f"{rel(path)}:{q.line}: query {q.name} is not <workload>-p<n>; ignored")
                continue
            rounds[q.name] += 1
            queries.append((system, wp[0], wp[1], q.name, rounds[q.name], q.latency_ms, rel(path), q.line))
        wp = logparse.phase_of(query)
        received, drop = app.totals()
        if wp is None:
            if received is not None:
                warnings.append(f"{rel(path)}: log of several queries; its drop counts are not assigned to a phase")
            continue
        if received is None:
            warnings.append(f"{rel(path)}: no `Records received` or `Final` line yet")
            continue
        source = "Final line" if app.final else ("running totals" if app.total_received is not None else "sum of intervals")
        dropped.append((system, wp[0], wp[1], received, drop, app.dropped_pct(), source, app.final, rel(path)))
    return queries, dropped, warnings


def draw_latency(workload, queries, info, out):
    """Figure 10 (RocksDB) or 11 (Valkey): one panel per phase, latency of each query round per system."""
    fig_id, stem = WORKLOAD_FIG.get(workload, ("fig10-11", f"fig10-11-e2e-{workload}"))
    phases = sorted({q[2] for q in queries})
    fig, axes = plt.subplots(1, len(phases), figsize=(4.6 * len(phases), 4.0), squeeze=False)
    for ax, ph in zip(axes[0], phases):
        qs = [q for q in queries if q[2] == ph]
        for system in order({q[0] for q in qs}):
            pts = sorted((q[4], q[5]) for q in qs if q[0] == system)
            text, color, marker = SYSTEMS.get(system, (system, None, "x"))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, label=f"{text}, measured")
            pub_system = PUBLISHED_SYSTEM.get(system)
            pub_ms = published.e2e_latency_ms(pub_system, workload, ph) if pub_system else None
            if pub_ms is not None:
                pv = published.E2E_LATENCY_S[(pub_system, workload, ph)]
                # One legend entry per system; the value is written on each panel's line.
                ax.axhline(pub_ms, color=color, linestyle=":", linewidth=1.5,
                           label=f"{text.split(' (')[0]}, {published.LABEL} (value on the line)")
                ax.annotate(f"published: {published.fmt_latency(pv)}", (1.0, pub_ms),
                            xycoords=("axes fraction", "data"), xytext=(-4, 3), textcoords="offset points",
                            ha="right", va="bottom", fontsize=7, color=color)
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 4)  # room above the top line for its value
        ax.set_title(PHASE_TEXT.get((workload, ph), f"P{ph}"), fontsize=10)
        ax.set_xlabel("query round (repeated every query interval)")
        ax.set_ylabel("query latency (ms, log scale)")
        rounds = sorted({q[4] for q in qs})
        ax.set_xticks(rounds)
        ax.grid(True, which="major", alpha=0.3)
    # One legend for every panel, right of them, so no line is hidden behind it.
    seen = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.55))
    fig.suptitle(f"Fig. {fig_id[3:]} - End to end, {workload}: latency of the phase questions while the recording "
                 "is replayed at its recorded pace")
    fig.tight_layout()
    keys = {f"{workload}-p{p}" for p in phases}
    caption = add_caption(fig, info.caption(
        f"Fig. {fig_id[3:]}: {workload} phases P1-P3 replayed into Loom (loom-app) and InfluxDB (influx-app); "
        "each point is one round of the phase question over [now-80 s, now-20 s] (Influx-complete asks once, after "
        "its backlog is written); dotted lines are the paper's published latencies", keys,
        "FishStore's end-to-end latencies exist only in the paper",
        knobs=("query_interval_s", "query_count", "complete_replay_s")))
    return save(fig, out, stem), caption


def draw_dropped(dropped, info, out):
    """Figure 12: % of received records dropped, per workload phase and system, published InfluxDB range beside."""
    groups = sorted({(d[1], d[2]) for d in dropped})
    systems = order({d[0] for d in dropped})
    n = len(systems) + 1
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(7.0, 1.6 * len(groups) + 3), 4.4))
    val = {(d[0], d[1], d[2]): d for d in dropped}
    for k, system in enumerate(systems):
        xs, ys, partial = [], [], []
        for i, g in enumerate(groups):
            d = val.get((system, *g))
            if d is not None and d[5] is not None:
                xs.append(i + (k - (n - 1) / 2) * width)
                ys.append(d[5])
                partial.append(not d[7])
        text, color, _ = SYSTEMS.get(system, (system, None, None))
        bars = ax.bar(xs, ys, width, color=color, label=f"{text}, measured")
        ax.bar_label(bars, [f"{y:.1f}{'*' if p else ''}" for y, p in zip(ys, partial)], fontsize=7, padding=2)
    # Published InfluxDB: a range over the three phases of each workload, hatched, never merged.
    first = True
    for i, (wl, _) in enumerate(groups):
        r = published.E2E_INFLUX_DROPPED_PCT.get(wl)
        if r:
            x = i + (n - 1 - (n - 1) / 2) * width
            ax.bar([x], [r[1] - r[0]], width, bottom=[r[0]], color="0.85", hatch="//", edgecolor="0.45",
                   label=f"InfluxDB, {published.LABEL}: range over P1-P3" if first else None)
            first = False
    ax.set_xticks(range(len(groups)), [f"{wl}\nP{ph}" for wl, ph in groups], fontsize=8)
    ax.set_xlabel("workload and phase")
    ax.set_ylabel("telemetry records dropped (% of received)")
    ax.set_ylim(0, 115)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    if any(not d[7] for d in dropped):
        note(ax, "* log without a Final line (run cut short): partial counts")
    fig.suptitle("Fig. 12 - End to end: telemetry the endpoint dropped at the recorded rate")
    fig.tight_layout()
    keys = {f"{wl}-p{ph}" for wl, ph in groups}
    caption = add_caption(fig, info.caption(
        "Fig. 12: records dropped by each endpoint over the whole replay (Loom's and InfluxDB's bounded queues "
        "drop when ingest falls behind; Influx-complete queues everything, so it drops nothing but answers only "
        "after its backlog is written)", keys, knobs=("query_interval_s", "query_count", "complete_replay_s")))
    return save(fig, out, "fig12-e2e-dropped"), caption


def build(log_dir, out):
    queries, dropped, warnings = collect(log_dir)
    for w in warnings:
        warn(w)
    data_dir, _ = out_dirs(out)
    how = ("run make evaluate-small EVAL_STEPS=record,e2e, or by hand make e2e-mach-app QUERY=rocksdb-p1 and, "
           "in another terminal, make rocksdb-p1 (make record-rocksdb-p1 or gen-rocksdb-p1 first)")
    if not queries and not dropped:
        why = f"no {rel(log_dir)}/e2e-* logs with query latencies or drop counts; {how}"
        return [Result("fig10", "end to end rocksdb", False, why), Result("fig11", "end to end valkey", False, why),
                Result("fig12", "end to end dropped", False, why)]
    write_csv(os.path.join(data_dir, "e2e-queries.csv"),
              ["system", "workload", "phase", "query", "round", "latency_ms", "log", "line"], queries)
    write_csv(os.path.join(data_dir, "e2e-dropped.csv"),
              ["system", "workload", "phase", "received", "dropped", "dropped_pct", "counts_from", "final", "log"],
              dropped)
    info = RunInfo(log_dir)
    for w in info.warnings:
        warn(w)
    results = []
    for workload in sorted(WORKLOAD_FIG):
        qs = [q for q in queries if q[1] == workload]
        fig_id = WORKLOAD_FIG[workload][0]
        if not qs:
            results.append(Result(fig_id, f"end to end {workload}", False,
                                  f"no answered {workload}-p* queries in {rel(log_dir)}/e2e-* logs; {how.replace('rocksdb', workload)}"))
            continue
        png, caption = draw_latency(workload, qs, info, out)
        phases = sorted({q[2] for q in qs})
        systems = sorted({label(q[0]).split(" (")[0] for q in qs})
        results.append(Result(fig_id, f"end to end {workload}", True,
                              f"{', '.join(f'P{p}' for p in phases)} x {'/'.join(systems)}, {len(qs)} query latencies",
                              png, caption))
    other = sorted({q[1] for q in queries} - set(WORKLOAD_FIG))
    for workload in other:
        png, caption = draw_latency(workload, [q for q in queries if q[1] == workload], info, out)
        results.append(Result("fig10-11", f"end to end {workload}", True, "queries of another workload", png, caption))
    if dropped:
        png, caption = draw_dropped(dropped, info, out)
        results.append(Result("fig12", "end to end dropped", True,
                              f"drop counts from {len(dropped)} logs", png, caption))
    else:
        results.append(Result("fig12", "end to end dropped", False, f"no drop counts in {rel(log_dir)}/e2e-* logs; {how}"))
    return results


def main(argv=None):
    return run_one(build, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
