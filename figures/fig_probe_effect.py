"""Figure 13, probe effect: RocksDB throughput with telemetry sent to each endpoint, % of noop.

Reads evaluation-output/pe-<endpoint> (rocksdb-workload output teed by
`make pe-rocksdb-noop` / `make pe-rocksdb OUT_FILE=<endpoint>`; one run per
`Average rocksdb rate per sec` line, so appended runs give a spread). The
endpoints' own logs (pe-*-app) are not runs and are ignored.
Writes figures/data/probe-effect.csv, probe-effect-runs.csv and
figures/figures/fig13-probe-effect.{png,pdf}.
"""

import os
import sys

import logparse
from plotutil import (PUBLISHED_LABEL, PUBLISHED_PROBE_EFFECT_LOOM_OPS, PUBLISHED_PROBE_EFFECT_NOOP_OPS,
                      PUBLISHED_PROBE_EFFECT_PCT, Result, errbars, note, out_dirs, plt, rel, run_one, save,
                      summary, warn, write_csv)

FIG, TITLE, STEM = "fig13", "probe effect", "fig13-probe-effect"
NOOP = "noop"
# Endpoint names (log suffix) in plot order, with labels; `mach` is Loom's old name.
ENDPOINTS = {
    "noop": "noop (no endpoint)",
    "file-writer": "raw file",
    "loom": "Loom",
    "mach": "Loom",
    "influx": "InfluxDB",
    "fishstore": "FishStore",
}


def collect(log_dir):
    """({endpoint: [WorkloadRun]}, warnings)."""
    runs, warnings = {}, []
    for name in logparse.list_logs(log_dir, "pe-"):
        ep = logparse.pe_endpoint(name)
        if ep is None:
            continue
        path = os.path.join(log_dir, name)
        lines, w = logparse.read_lines(path)
        warnings += w
        rs, w = logparse.parse_workload_log(lines, rel(path))
        warnings += w
        if rs:
            runs.setdefault(ep, []).extend((r, rel(path)) for r in rs)
        else:
            warnings.append(f"{rel(path)}: no finished run (no `Average rocksdb rate per sec` line)")
    return runs, warnings


def order(endpoints):
    known = list(ENDPOINTS)
    return sorted(endpoints, key=lambda e: (known.index(e) if e in known else len(known), e))


def build(log_dir, out):
    runs, warnings = collect(log_dir)
    for w in warnings:
        warn(w)
    how = "run make pe-all (or make pe-rocksdb-noop, then make pe-rocksdb OUT_FILE=<endpoint> with its endpoint running)"
    if not runs:
        return [Result(FIG, TITLE, False, f"no finished runs in {rel(log_dir)}/pe-* logs; {how}")]
    data_dir, _ = out_dirs(out)
    noop = summary([r.ops_per_s for r, _ in runs[NOOP]])[0] if NOOP in runs else None
    eps = order(runs)

    write_csv(os.path.join(data_dir, "probe-effect-runs.csv"),
              ["endpoint", "ops_per_s", "pct_of_noop", "telemetry_sent", "telemetry_dropped",
               "telemetry_dropped_pct", "seconds", "log", "line"],
              [(ep, r.ops_per_s, 100.0 * r.ops_per_s / noop if noop else None, r.sent, r.dropped,
                r.dropped_pct(), r.seconds, log, r.line) for ep in eps for r, log in runs[ep]])
    rows = []
    for ep in eps:
        ops = [r.ops_per_s for r, _ in runs[ep]]
        med, lo, hi, n = summary(ops)
        pct = [100.0 * v / noop for v in (med, lo, hi)] if noop else [None] * 3
        drops = [r.dropped_pct() for r, _ in runs[ep] if r.dropped_pct() is not None]
        rows.append((ep, n, med, lo, hi, *pct, summary(drops)[0] if drops else None,
                     PUBLISHED_PROBE_EFFECT_PCT.get(ep)))
    write_csv(os.path.join(data_dir, "probe-effect.csv"),
              ["endpoint", "runs", "ops_per_s_median", "ops_per_s_min", "ops_per_s_max", "pct_of_noop_median",
               "pct_of_noop_min", "pct_of_noop_max", "telemetry_dropped_pct_median",
               "published_pct_of_noop_64core"], rows)

    fig, (ax_p, ax_a) = plt.subplots(1, 2, figsize=(12, 4.4))
    # (a) % of noop: measured next to published, each labelled.
    shown = order(set(eps) | set(PUBLISHED_PROBE_EFFECT_PCT))
    w = 0.38
    if noop:
        xs = [i - w / 2 for i, ep in enumerate(shown) if ep in runs]
        meas = [r for ep in shown for r in rows if r[0] == ep]
        med = [r[5] for r in meas]
        bars = ax_p.bar(xs, med, w, yerr=errbars(med, [r[6] for r in meas], [r[7] for r in meas]), capsize=3,
                        color="C0", label="measured, this machine (median of runs, bars min-max)")
        ax_p.bar_label(bars, [f"{v:.1f}" for v in med], fontsize=7, padding=5)
    else:
        note(ax_p, "no pe-noop run: measured % of noop unavailable (make pe-rocksdb-noop)")
    pub = [(i + w / 2, PUBLISHED_PROBE_EFFECT_PCT[ep]) for i, ep in enumerate(shown) if ep in PUBLISHED_PROBE_EFFECT_PCT]
    bars = ax_p.bar([p[0] for p in pub], [p[1] for p in pub], w, color="0.8", hatch="//", edgecolor="0.5",
                    label=PUBLISHED_LABEL)
    ax_p.bar_label(bars, [f"{p[1]:.1f}" for p in pub], fontsize=7, padding=5)
    ax_p.set_xticks(range(len(shown)), [ENDPOINTS.get(ep, ep) for ep in shown], fontsize=8)
    ax_p.set_ylabel("RocksDB throughput (% of noop)")
    ax_p.set_ylim(0, 135)
    ax_p.set_title("throughput kept with telemetry on")
    ax_p.grid(True, axis="y", alpha=0.3)
    ax_p.legend(fontsize=7, loc="upper center", ncol=2)

    # (b) measured absolute ops/s, with the telemetry dropped on the sender side.
    meas = [r for ep in eps for r in rows if r[0] == ep]
    med = [r[2] / 1e6 for r in meas]
    bars = ax_a.bar(range(len(meas)), med, 0.6,
                    yerr=errbars(med, [r[3] / 1e6 for r in meas], [r[4] / 1e6 for r in meas]), capsize=3, color="C0")
    ax_a.bar_label(bars, padding=5, labels=[f"{r[1]} run{'s' if r[1] != 1 else ''}" + (f"\n{r[8]:.2f} % telemetry dropped" if r[8] is not None else "")
                          for r in meas], fontsize=7)
    ax_a.set_xticks(range(len(meas)), [ENDPOINTS.get(r[0], r[0]) for r in meas], fontsize=8)
    ax_a.set_ylabel("RocksDB throughput (M ops/s)")
    ax_a.set_ylim(0, max(med) * 1.3 if med and max(med) > 0 else 1)
    ax_a.set_title("measured throughput, this machine (bars min-max)")
    ax_a.grid(True, axis="y", alpha=0.3)
    ax_a.set_xlabel(f"endpoint ({PUBLISHED_LABEL}: noop {PUBLISHED_PROBE_EFFECT_NOOP_OPS / 1e6:.2f} M ops/s, "
                    f"Loom {PUBLISHED_PROBE_EFFECT_LOOM_OPS / 1e6:.2f} M ops/s)", fontsize=8)
    ax_p.set_xlabel("endpoint receiving the telemetry", fontsize=8)
    fig.suptitle("Fig. 13 - Probe effect: live RocksDB workload (P3 probes) sending telemetry to an endpoint")
    fig.tight_layout()
    png = save(fig, out, STEM)
    nruns = sum(len(v) for v in runs.values())
    detail = f"{len(eps)} endpoint{'s' if len(eps) != 1 else ''} ({', '.join(eps)}), {nruns} run{'s' if nruns != 1 else ''}"
    if NOOP not in runs:
        detail += ", no noop baseline so no % of noop (make pe-rocksdb-noop)"
    elif not noop:
        detail += ", noop rate is 0 so no % of noop"
    return [Result(FIG, TITLE, True, detail, png)]


def main(argv=None):
    return run_one(build, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
