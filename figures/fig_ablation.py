"""Figures 15 and 16, index ablation: query duration and chunks read vs lookback.

Reads evaluation-output/ab-<system>-<query>-<lookback> (loom-app output teed by
`make ab-mach-app QUERY=ablation-<mode> LOOKBACK=<s>`). The query counts KV
reads slower than 80 µs in a 120 s window ending <lookback> + 5 s before the
newest data, with no index, the time index only, the range index only, or both.
Writes figures/data/ablation.csv (every query), figures/data/ablation-summary.csv
and figures/figures/fig15-ablation.{png,pdf}, fig16-exact-match.{png,pdf}.
"""

import os
import sys
from collections import defaultdict

import logparse
from plotutil import (PUBLISHED_LABEL, PUBLISHED_TIMERANGE_QUERY_S, Result, errbars, log_y_if_positive, note,
                      out_dirs, plt, rel, run_one, save, summary, warn, write_csv)

MODES = {
    "noindex": ("no index", "C3", "v"),
    "onlytime": ("time index only", "C2", "^"),
    "onlyrange": ("range index only", "C1", "s"),
    "timerange": ("time + range index", "C0", "o"),
}
HOW_TO_RUN = ("run make ab-mach-app QUERY=ablation-timerange LOOKBACK=60 and, in another terminal, "
              "make rocksdb-p1 REPLAY_DURATION=200 (per mode and lookback)")


def collect(log_dir):
    """(rows, warnings); a row is (system, mode, lookback_s, latency_ms, chunks_read, count, log, line)."""
    rows, warnings = [], []
    for name in logparse.list_logs(log_dir, "ab-"):
        path = os.path.join(log_dir, name)
        m = logparse.AB_LOG_NAME.match(name)
        if not m:
            warnings.append(f"{rel(path)}: name is not ab-<system>-<query>-<lookback>; ignored")
            continue
        lines, w = logparse.read_lines(path)
        warnings += w
        app, w = logparse.parse_app_log(lines, rel(path), default_lookback=int(m["lookback"]))
        warnings += w
        found = 0
        for q in app.queries:
            mode = logparse.ablation_mode(q.name)
            if mode is None:
                continue
            rows.append((m["system"], mode, q.lookback_s, q.latency_ms, q.chunks_read, q.count, rel(path), q.line))
            found += 1
        if not found:
            warnings.append(f"{rel(path)}: no ablation query answered yet")
    return rows, warnings


def summarise(rows):
    """{(system, mode, lookback): (latency median, min, max, n, chunks median, count median)}."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r[0], r[1], r[2])].append(r)
    out = {}
    for k, rs in sorted(groups.items()):
        lat = summary([r[3] for r in rs])
        chunks = [r[4] for r in rs if r[4] is not None]
        counts = [r[5] for r in rs if r[5] is not None]
        out[k] = (*lat, summary(chunks)[0] if chunks else None, summary(counts)[0] if counts else None)
    return out


def _unit(summ):
    """Seconds when the slowest query takes over 2 s, else ms."""
    slowest = max(v[2] for v in summ.values())
    return (1e-3, "s") if slowest > 2000 else (1.0, "ms")


def _mode_lines(ax, summ, value, scale=1.0, modes=MODES, errors=True):
    keys = sorted({(s, m) for s, m, _ in summ}, key=lambda k: (list(MODES).index(k[1]), k[0]))
    for system, mode in keys:
        if mode not in modes:
            continue
        pts = sorted((lb, v) for (s, m, lb), v in summ.items() if s == system and m == mode and value(v) is not None)
        if not pts:
            continue
        text, color, marker = MODES[mode]
        label = text if system in ("mach", "loom") else f"{text} ({system})"
        xs = [p[0] for p in pts]
        ys = [value(p[1]) * scale for p in pts]
        if errors:
            lo = [p[1][1] * scale for p in pts]
            hi = [p[1][2] * scale for p in pts]
            ax.errorbar(xs, ys, yerr=errbars(ys, lo, hi), color=color, marker=marker, capsize=3, label=label)
        else:
            ax.plot(xs, ys, color=color, marker=marker, label=label)


def draw_fig15(summ, out):
    scale, unit = _unit(summ)
    fig, (ax_d, ax_c) = plt.subplots(1, 2, figsize=(11, 4.2))
    _mode_lines(ax_d, summ, lambda v: v[0], scale)
    _mode_lines(ax_c, summ, lambda v: v[4], errors=False)
    log_d = log_y_if_positive(ax_d, [v[1] for v in summ.values()])
    log_c = log_y_if_positive(ax_c, [v[4] for v in summ.values()])
    ax_d.set_ylabel(f"query duration ({unit}{', log scale' if log_d else ''})")
    ax_d.set_title("duration, median of repetitions (bars min-max)")
    ax_c.set_ylabel(f"chunks read{' (log scale)' if log_c else ''}")
    ax_c.set_title("chunks read per query")
    if not any(v[4] is not None for v in summ.values()):
        note(ax_c, "no `chunks read` in the answers")
    for ax in (ax_d, ax_c):
        ax.set_xlabel("lookback: window end before newest data (s)")
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = ax_d.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, -0.06))
    fig.suptitle("Fig. 15 - Index ablation in Loom (measured): count of KV reads > 80 µs in a 120 s window")
    fig.tight_layout()
    return save(fig, out, "fig15-ablation")


def draw_fig16(summ, out):
    tr = {k: v for k, v in summ.items() if k[1] == "timerange"}
    scale, unit = _unit(tr)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    _mode_lines(ax, tr, lambda v: v[0], scale, modes={"timerange"})
    ax.axhline(PUBLISHED_TIMERANGE_QUERY_S * (1e3 if unit == "ms" else 1.0), color="0.55", linestyle=":",
               label=f"Loom time + range, {PUBLISHED_LABEL}: ~{PUBLISHED_TIMERANGE_QUERY_S} s")
    ax.set_xlabel("lookback: window end before newest data (s)")
    log = log_y_if_positive(ax, [v[1] for v in tr.values()])
    ax.set_ylabel(f"query duration ({unit}{', log scale' if log else ''})")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    note(ax, "FishStore exact-index: see the paper's published figure (not redrawn)")
    ax.set_title("Fig. 16 - Exact-match count with Loom's time + range index")
    fig.tight_layout()
    return save(fig, out, "fig16-exact-match")


def build(log_dir, out):
    rows, warnings = collect(log_dir)
    for w in warnings:
        warn(w)
    if not rows:
        why = f"no {rel(log_dir)}/ab-* logs with answered ablation queries; {HOW_TO_RUN}"
        return [Result("fig15", "ablation", False, why), Result("fig16", "exact-match", False, why)]
    data_dir, _ = out_dirs(out)
    write_csv(os.path.join(data_dir, "ablation.csv"),
              ["system", "mode", "lookback_s", "latency_ms", "chunks_read", "count", "log", "line"], rows)
    summ = summarise(rows)
    write_csv(os.path.join(data_dir, "ablation-summary.csv"),
              ["system", "mode", "lookback_s", "latency_ms_median", "latency_ms_min", "latency_ms_max",
               "repetitions", "chunks_read_median", "count_median"],
              [(*k, *v) for k, v in summ.items()])
    modes = sorted({k[1] for k in summ}, key=list(MODES).index)
    lookbacks = sorted({k[2] for k in summ})
    results = [Result("fig15", "ablation", True,
                      f"{len(modes)} mode{'s' if len(modes) != 1 else ''} ({', '.join(modes)}) x "
                      f"{len(lookbacks)} lookback{'s' if len(lookbacks) != 1 else ''}, {len(rows)} quer{'ies' if len(rows) != 1 else 'y'}",
                      draw_fig15(summ, out))]
    tr = [k for k in summ if k[1] == "timerange"]
    if tr:
        results.append(Result("fig16", "exact-match", True,
                              f"time+range x {len(tr)} lookback{'s' if len(tr) != 1 else ''}",
                              draw_fig16(summ, out)))
    else:
        results.append(Result("fig16", "exact-match", False,
                              f"no ablation-timerange queries in {rel(log_dir)}/ab-* logs; "
                              "run make ab-mach-app QUERY=ablation-timerange LOOKBACK=60 (+ make rocksdb-p1)"))
    return results


def main(argv=None):
    return run_one(build, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
