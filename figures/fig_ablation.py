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

from matplotlib.ticker import NullLocator

import logparse
import published
from plotutil import (PUBLISHED_LABEL, PUBLISHED_TIMERANGE_QUERY_S, Result, add_caption, errbars, label_log_y,
                      log_y_if_positive, note, out_dirs, plt, rel, run_one, save, summary, warn, write_csv)
from runinfo import RunInfo

MODES = {
    "noindex": ("no index", "C3", "v"),
    "onlytime": ("time index only", "C2", "^"),
    "onlyrange": ("range index only", "C1", "s"),
    "timerange": ("time + range index", "C0", "o"),
}
HOW_TO_RUN = ("run make evaluate-small EVAL_STEPS=record,ab, or by hand make ab-mach-app "
              "QUERY=ablation-timerange LOOKBACK=60 and, in another terminal, make rocksdb-p2 REPLAY_DURATION=200")


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


def _lookbacks(ax, summ):
    lbs = sorted({k[2] for k in summ})
    ax.set_xscale("log")
    ax.set_xticks(lbs, [str(lb) for lb in lbs])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("lookback: window end before the newest data (s, log scale)")
    ax.grid(True, which="major", alpha=0.3)


def _published_lines(ax, noindex=True):
    """Published Loom (64-core server): time + range ~4.5 s at every lookback; no index 204-1019 s."""
    ax.axhline(PUBLISHED_TIMERANGE_QUERY_S, color=MODES["timerange"][1], linestyle=":", linewidth=1.3,
               label=f"time + range index, {PUBLISHED_LABEL}: ~{PUBLISHED_TIMERANGE_QUERY_S:g} s")
    if noindex:
        lo, hi = published.NOINDEX_QUERY_S
        ax.axhspan(lo, hi, color=MODES["noindex"][1], alpha=0.12, hatch="//",
                   label=f"no index, {PUBLISHED_LABEL}: {lo:g}-{hi:g} s (lookback 20-600 s)")


def draw_fig15(summ, info, out):
    """Query duration (s, log scale) and chunks read vs lookback per index mode, published beside."""
    fig, (ax_d, ax_c) = plt.subplots(1, 2, figsize=(12, 4.6))
    _mode_lines(ax_d, summ, lambda v: v[0], 1e-3)
    _mode_lines(ax_c, summ, lambda v: v[4], errors=False)
    _published_lines(ax_d)
    ax_d.set_yscale("log")
    ax_d.set_ylabel("query duration (s, log scale)")
    ax_d.set_title("duration, median of repetitions (bars min-max)", fontsize=10)
    log_c = log_y_if_positive(ax_c, [v[4] for v in summ.values()], min_ratio=20)
    ax_c.set_ylabel(f"chunks read per query{' (log scale)' if log_c else ''}")
    ax_c.set_title("chunks read per query (measured)", fontsize=10)
    if not any(v[4] is not None for v in summ.values()):
        note(ax_c, "no `chunks read` in the answers")
    for ax in (ax_d, ax_c):
        _lookbacks(ax, summ)
    handles, labels = ax_d.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, 0.02))
    fig.suptitle("Fig. 15 - Index ablation in Loom: count of KV reads > 80 µs in a 120 s window")
    fig.tight_layout()
    label_log_y(ax_d)
    if log_c:
        label_log_y(ax_c)
    # The legend sits under the axes, the caption under the legend.
    caption = add_caption(fig, info.caption(
        "Fig. 15: the same count query over the 120 s window ending <lookback> + 5 s before the newest data, "
        "answered with no index, the time index only, the range index only, or both (all give the same count); "
        f"{_reps(summ)}; the replayed RocksDB P2 data is stored at its own (event) time; shaded band and dotted line: "
        "the paper's published durations", {"rocksdb-p2"}, knobs=("ab_lookbacks", "ab_speed", "ab_max_rate", "ab_reps")), y=-0.13)
    return save(fig, out, "fig15-ablation"), caption


def _reps(summ):
    n = sorted({v[3] for v in summ.values()})
    return f"{'/'.join(map(str, n))} repetition(s) per point"


def draw_fig16(summ, info, out):
    """Time + range query duration vs lookback: flat if the index jumps straight to the window."""
    tr = {k: v for k, v in summ.items() if k[1] == "timerange"}
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    _mode_lines(ax, tr, lambda v: v[0], 1e-3, modes={"timerange"})
    _published_lines(ax, noindex=False)
    ax.set_yscale("log")
    ax.set_ylabel("query duration (s, log scale)")
    _lookbacks(ax, tr)
    label_log_y(ax)
    ax.legend(fontsize=8, loc="center left")
    note(ax, "FishStore exact index: published only in the paper, no numbers here (not run: no package)")
    ax.set_title("Fig. 16 - Exact count with Loom's time + range index vs lookback", fontsize=10)
    fig.tight_layout()
    caption = add_caption(fig, info.caption(
        "Fig. 16: duration of the exact count (KV reads > 80 µs in a 120 s window) with the time + range index as "
        f"the window moves back in time; {_reps(tr)}; dotted: the paper's published Loom (about 4.5 s at every "
        "lookback); the paper's FishStore exact-index curve is not redrawn (FishStore is not part of this project)",
        {"rocksdb-p2"}, knobs=("ab_lookbacks", "ab_speed", "ab_max_rate", "ab_reps")))
    return save(fig, out, "fig16-exact-match"), caption


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
    info = RunInfo(log_dir)
    results = [Result("fig15", "ablation", True,
                      f"{len(modes)} mode{'s' if len(modes) != 1 else ''} ({', '.join(modes)}) x "
                      f"{len(lookbacks)} lookback{'s' if len(lookbacks) != 1 else ''}, {len(rows)} quer{'ies' if len(rows) != 1 else 'y'}",
                      *draw_fig15(summ, info, out))]
    tr = [k for k in summ if k[1] == "timerange"]
    if tr:
        results.append(Result("fig16", "exact-match", True,
                              f"time+range x {len(tr)} lookback{'s' if len(tr) != 1 else ''}",
                              *draw_fig16(summ, info, out)))
    else:
        results.append(Result("fig16", "exact-match", False,
                              f"no ablation-timerange queries in {rel(log_dir)}/ab-* logs; "
                              "run make ab-mach-app QUERY=ablation-timerange LOOKBACK=60 (+ make rocksdb-p2)"))
    return results


def main(argv=None):
    return run_one(build, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
