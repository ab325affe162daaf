"""Figure 14, ingest scaling: records/s and MB/s per store and payload size.

Reads evaluation-output/is-* (`db=` lines of baselines/ingest-scaling, one per
run) and is-dd (direct-I/O write bandwidth). Writes
figures/data/ingest-scaling.csv (median, min, max over runs),
figures/data/ingest-scaling-runs.csv (every run) and
figures/figures/fig14-ingest-scaling.{png,pdf}.
"""

import os
import sys
from collections import defaultdict

import logparse
from plotutil import (PUBLISHED_INGEST_RPS, PUBLISHED_LABEL, Result, add_caption, errbars, log_y_if_positive, note,
                      out_dirs, plt, rel, run_one, save, summary, warn, write_csv)
from runinfo import RunInfo

FIG, TITLE, STEM = "fig14", "ingest scaling", "fig14-ingest-scaling"
# Plot order and labels of the stores (`db=` values).
STORES = {
    "loom": ("Loom", "C0", "o"),
    "loom-index": ("Loom + range index", "C1", "s"),
    "lmdb": ("LMDB", "C2", "^"),
    "rocksdb": ("RocksDB", "C3", "v"),
    "file": ("raw file", "C4", "D"),
}


def collect(log_dir):
    """(runs, dd MB/s list, warnings) from the is-* logs in `log_dir`."""
    runs, dd, warnings = [], [], []
    for name in logparse.list_logs(log_dir, "is-"):
        path = os.path.join(log_dir, name)
        lines, w = logparse.read_lines(path)
        warnings += w
        if name == "is-dd":
            rates, w = logparse.parse_dd_log(lines, rel(path))
            dd += rates
        elif name in logparse.IS_NOT_RESULT_LOGS or name.endswith(".md"):
            continue
        else:
            r, w = logparse.parse_ingest_log(lines, rel(path))
            runs += r
        warnings += w
    return runs, dd, warnings


def label(db, threads):
    name = STORES.get(db, (db,))[0]
    return name if threads == 1 else f"{name} ({threads} threads)"


def build(log_dir, out):
    runs, dd, warnings = collect(log_dir)
    for w in warnings:
        warn(w)
    data_dir, _ = out_dirs(out)
    if not runs:
        return [Result(FIG, TITLE, False,
                       f"no {rel(log_dir)}/is-* logs with db= result lines; run make is-table "
                       "(or e.g. make is-mach SIZE=8 RUNS=3 DURATION=30)")]

    groups = defaultdict(list)
    for r in runs:
        groups[(r.db, r.threads, r.size)].append(r)
    write_csv(os.path.join(data_dir, "ingest-scaling-runs.csv"),
              ["db", "threads", "size_bytes", "records_per_s", "mb_per_s", "log", "line"],
              [(r.db, r.threads, r.size, r.records_per_s, r.mb_per_s, r.log, r.line) for r in runs])
    rows = []
    for (db, t, size), rs in sorted(groups.items()):
        rps = summary([r.records_per_s for r in rs])
        mbps = summary([r.mb_per_s for r in rs])
        rows.append((db, t, size, rps[3], *rps[:3], *mbps[:3]))
    write_csv(os.path.join(data_dir, "ingest-scaling.csv"),
              ["db", "threads", "size_bytes", "runs", "records_per_s_median", "records_per_s_min",
               "records_per_s_max", "mb_per_s_median", "mb_per_s_min", "mb_per_s_max"], rows)

    # One line per (store, threads), stores in a fixed order.
    order = list(STORES)
    series = sorted({(db, t) for db, t, _ in groups}, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k))
    sizes = sorted({s for _, _, s in groups})
    fig, (ax_r, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for db, t in series:
        pts = [row for row in rows if row[0] == db and row[1] == t]
        xs = [p[2] for p in pts]
        _, color, marker = STORES.get(db, (db, None, "x"))
        style = dict(marker=marker, color=color, capsize=3, linestyle="-" if t == 1 else "--",
                     label=label(db, t))
        ax_r.errorbar(xs, [p[4] for p in pts], yerr=errbars([p[4] for p in pts], [p[5] for p in pts], [p[6] for p in pts]), **style)
        ax_m.errorbar(xs, [p[7] for p in pts], yerr=errbars([p[7] for p in pts], [p[8] for p in pts], [p[9] for p in pts]), **style)

    pub_x = sorted(PUBLISHED_INGEST_RPS)
    pub = dict(color="0.55", linestyle=":", marker="*", label=f"Loom, 1 thread, {PUBLISHED_LABEL}")
    ax_r.plot(pub_x, [PUBLISHED_INGEST_RPS[s] for s in pub_x], **pub)
    ax_m.plot(pub_x, [PUBLISHED_INGEST_RPS[s] * s / 1e6 for s in pub_x], **pub)
    if dd:
        med, lo, hi, n = summary(dd)
        ax_m.axhline(med, color="k", linestyle="-.", linewidth=1,
                     label=f"dd direct-I/O write, this machine ({med:.0f} MB/s, {n} run{'s' if n > 1 else ''})")

    all_sizes = sorted(set(sizes) | set(pub_x))
    for ax in (ax_r, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_sizes, [str(s) for s in all_sizes])
        ax.minorticks_off()
        ax.set_xlabel("record payload size (bytes)")
        ax.grid(True, which="major", alpha=0.3)
    log = log_y_if_positive(ax_r, [r.records_per_s for r in runs])
    ax_r.set_ylabel(f"ingest rate (records/s{', log scale' if log else ''})")
    ax_r.set_title("records per second")
    ax_m.set_ylabel("payload throughput (MB/s, 1 MB = 10^6 B)")
    ax_m.set_title("payload bytes per second")
    ax_m.set_ylim(bottom=0)
    note(ax_r, "measured: median of runs, bars min-max")
    handles, labels = ax_m.get_legend_handles_labels()
    # Measured stores first, then the references (published, dd).
    ref = [("published" in lab or lab.startswith("dd ")) for lab in labels]
    handles = [h for h, r in zip(handles, ref) if not r] + [h for h, r in zip(handles, ref) if r]
    labels = [lab for lab, r in zip(labels, ref) if not r] + [lab for lab, r in zip(labels, ref) if r]
    fig.suptitle("Fig. 14 - Ingest scaling: one source, one writer per store")
    fig.tight_layout()
    fig.legend(handles, labels, loc="center left", fontsize=8, bbox_to_anchor=(1.0, 0.55))
    runs_per = sorted({len(v) for v in groups.values()})
    caption = add_caption(fig, RunInfo(log_dir).caption(
        "Fig. 14: records written per second by one writer (RocksDB also with 2 threads) into "
        "each store, random payload of the given size, generated in process (no recording); MB/s counts payload "
        "bytes; the dash-dot line is this disk's direct-I/O write bandwidth (dd); the dotted line is the "
        f"published Loom (64-core server, NVMe); medians of {'/'.join(map(str, runs_per))} run(s) per point",
        knobs=("is_runs", "is_duration_s", "dd_mb")))
    png = save(fig, out, STEM)
    nstores = len(series)
    detail = f"{nstores} store{'s' if nstores != 1 else ''} x {len(sizes)} size{'s' if len(sizes) != 1 else ''}, {len(runs)} run{'s' if len(runs) != 1 else ''}"
    detail += ", dd reference" if dd else ", no is-dd reference (make is-dd)"
    return [Result(FIG, TITLE, True, detail, png, caption)]


def main(argv=None):
    return run_one(build, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
