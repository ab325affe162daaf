"""Figure 13, probe effect: RocksDB throughput with telemetry sent to each endpoint (% of noop),
each endpoint's CPU seconds per million records, and the Valkey probes' cost.

Reads evaluation-output/pe-<endpoint> (rocksdb-workload output teed by
`make pe-rocksdb-noop` / `make pe-rocksdb OUT_FILE=<endpoint>`; one run per
`Average rocksdb rate per sec` line, so appended runs give a spread),
pe-<endpoint>-app (the endpoints' own logs: `Endpoint CPU:` at exit, plus
`influxd CPU:` for InfluxDB) and valkey-pe-<none|syscalls|both> (`make valkey-pe-*`).
Writes figures/data/probe-effect.csv, probe-effect-runs.csv, probe-effect-cpu.csv,
valkey-probe-cost.csv and figures/figures/fig13-probe-effect.{png,pdf}.
"""

import os
import sys

import logparse
import published
from plotutil import Result, add_caption, errbars, note, out_dirs, plt, rel, run_one, save, summary, warn, write_csv
from runinfo import RunInfo

FIG, TITLE, STEM = "fig13", "probe effect", "fig13-probe-effect"
NOOP = "noop"
# Endpoint names (log suffix) in plot order, with labels; `mach` is Loom's old name.
ENDPOINTS = {
    "noop": "noop\n(no endpoint)",
    "file-writer": "raw file",
    "loom": "Loom",
    "mach": "Loom",
    "influx": "InfluxDB",
    "fishstore": "FishStore\n(published only)",
}
VALKEY_PROBES = {"none": "no probe", "syscalls": "syscall probe", "both": "syscall +\npacket probes"}


def collect(log_dir):
    """({endpoint: [(WorkloadRun, log)]}, {endpoint: [(EndpointRun, log)]}, {probes: [WorkloadRun]}, warnings)."""
    runs, cpu, valkey, warnings = {}, {}, {}, []
    for name in logparse.list_logs(log_dir, "pe-"):
        path = os.path.join(log_dir, name)
        lines, w = logparse.read_lines(path)
        warnings += w
        ep = logparse.pe_endpoint(name)
        if ep is not None:
            rs, w = logparse.parse_workload_log(lines, rel(path))
            warnings += w
            if rs:
                runs.setdefault(ep, []).extend((r, rel(path)) for r in rs)
            else:
                warnings.append(f"{rel(path)}: no finished run (no `Average rocksdb rate per sec` line)")
            continue
        ep = logparse.pe_endpoint_app(name)
        if ep is not None:
            rs, w = logparse.parse_endpoint_log(lines, rel(path))
            warnings += w
            cpu.setdefault(ep, []).extend((r, rel(path)) for r in rs)
    for name in logparse.list_logs(log_dir, "valkey-pe-"):
        m = logparse.VALKEY_PE_LOG_NAME.match(name)
        if not m:
            continue
        path = os.path.join(log_dir, name)
        lines, w = logparse.read_lines(path)
        rs, w2 = logparse.parse_workload_log(lines, rel(path))
        warnings += w + w2
        if rs:
            valkey[m["probes"]] = rs
    return runs, cpu, valkey, warnings


def order(endpoints):
    known = list(ENDPOINTS)
    return sorted(endpoints, key=lambda e: (known.index(e) if e in known else len(known), e))


def panel_pct(ax, runs, rows, noop):
    shown = order(set(runs) | set(published.PROBE_EFFECT_PCT))
    w = 0.38
    if noop:
        meas = [r for ep in shown for r in rows if r[0] == ep]
        xs = [shown.index(r[0]) - w / 2 for r in meas]
        med = [r[5] for r in meas]
        bars = ax.bar(xs, med, w, yerr=errbars(med, [r[6] for r in meas], [r[7] for r in meas]), capsize=3,
                      color="C0", label="measured here: median of runs, bars min-max")
        ax.bar_label(bars, [f"{v:.1f}" for v in med], fontsize=7, padding=6)
    else:
        note(ax, "no pe-noop run: no % of noop (make pe-rocksdb-noop)")
    pub = [(i + w / 2, published.PROBE_EFFECT_PCT[ep], ep) for i, ep in enumerate(shown)
           if ep in published.PROBE_EFFECT_PCT]
    bars = ax.bar([p[0] for p in pub], [p[1] for p in pub], w, color="0.85", hatch="//", edgecolor="0.45",
                  label=published.LABEL)
    ax.bar_label(bars, [f"{p[1]:.1f}" for p in pub], fontsize=7, padding=2)
    ax.set_xticks(range(len(shown)), [ENDPOINTS.get(ep, ep) for ep in shown], fontsize=8)
    ax.set_xlabel("endpoint receiving the telemetry")
    ax.set_ylabel("RocksDB throughput (% of noop)")
    ax.set_ylim(0, 140)
    ax.set_title("(a) throughput kept with telemetry on", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")


def panel_cpu(ax, cpu_rows):
    if not cpu_rows:
        note(ax, "no `Endpoint CPU:` lines in pe-*-app logs")
        ax.set_axis_off()
        return
    xs = range(len(cpu_rows))
    app = [r[2] for r in cpu_rows]
    server = [r[3] or 0.0 for r in cpu_rows]
    ax.bar(xs, app, 0.6, color="C0", label="endpoint process (getrusage at exit)")
    if any(server):
        ax.bar(xs, server, 0.6, bottom=app, color="C1", label="influxd (/proc/<pid>/stat)")
    for x, r in zip(xs, cpu_rows):
        ax.text(x, r[2] + (r[3] or 0.0), f"{r[2] + (r[3] or 0.0):.2f}\n({r[1]} runs)", ha="center", va="bottom",
                fontsize=7)
    ax.set_xticks(list(xs), [ENDPOINTS.get(r[0], r[0]) for r in cpu_rows], fontsize=8)
    ax.set_xlabel("endpoint (measured here; not published)")
    ax.set_ylabel("CPU seconds per million records received")
    top = max(a + b for a, b in zip(app, server))
    ax.set_ylim(0, top * 1.35 if top > 0 else 1)
    ax.set_title("(b) endpoint CPU cost, median of runs", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")


def panel_valkey(ax, valkey):
    base = summary([r.ops_per_s for r in valkey["none"]])[0] if valkey.get("none") else None
    probes = [p for p in VALKEY_PROBES if valkey.get(p)]
    if not base or not probes:
        note(ax, "no valkey-pe-none run (make valkey-pe-all)")
        ax.set_axis_off()
        return []
    rows = []
    for p in probes:
        med, lo, hi, n = summary([r.ops_per_s for r in valkey[p]])
        rows.append((p, n, med, lo, hi, 100 * med / base, 100 * lo / base, 100 * hi / base))
    pct = [r[5] for r in rows]
    bars = ax.bar(range(len(rows)), pct, 0.6, yerr=errbars(pct, [r[6] for r in rows], [r[7] for r in rows]),
                  capsize=3, color="C2")
    ax.bar_label(bars, [f"{r[5]:.1f}\n{r[2] / 1e3:.0f} k req/s" for r in rows], fontsize=7, padding=6)
    ax.set_xticks(range(len(rows)), [VALKEY_PROBES[r[0]] for r in rows], fontsize=8)
    ax.set_xlabel("probes on the Valkey server")
    ax.set_ylabel("requests/s (% of no probe; telemetry discarded)", fontsize=9)
    ax.set_ylim(0, max(140, max(r[7] for r in rows) * 1.25))
    ax.set_title("(c) Valkey: cost of the probes themselves", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    return rows


def build(log_dir, out):
    runs, cpu, valkey, warnings = collect(log_dir)
    for w in warnings:
        warn(w)
    how = ("run make evaluate-small EVAL_STEPS=pe,valkey-pe, or make pe-all (or make pe-rocksdb-noop, then "
           "make pe-rocksdb OUT_FILE=<endpoint> with its endpoint running)")
    if not runs and not valkey:
        return [Result(FIG, TITLE, False, f"no finished runs in {rel(log_dir)}/pe-* or valkey-pe-* logs; {how}")]
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
        med, lo, hi, n = summary([r.ops_per_s for r, _ in runs[ep]])
        pct = [100.0 * v / noop for v in (med, lo, hi)] if noop else [None] * 3
        drops = [r.dropped_pct() for r, _ in runs[ep] if r.dropped_pct() is not None]
        rows.append((ep, n, med, lo, hi, *pct, summary(drops)[0] if drops else None,
                     published.PROBE_EFFECT_PCT.get(ep)))
    write_csv(os.path.join(data_dir, "probe-effect.csv"),
              ["endpoint", "runs", "ops_per_s_median", "ops_per_s_min", "ops_per_s_max", "pct_of_noop_median",
               "pct_of_noop_min", "pct_of_noop_max", "telemetry_dropped_pct_median",
               "published_pct_of_noop_64core"], rows)
    cpu_rows = []
    for ep in order(cpu):
        per_app = [r.cpu_s * 1e6 / r.records for r, _ in cpu[ep] if r.records]
        per_srv = [r.influxd_cpu_s * 1e6 / r.records for r, _ in cpu[ep] if r.records and r.influxd_cpu_s is not None]
        if per_app:
            cpu_rows.append((ep, len(per_app), summary(per_app)[0], summary(per_srv)[0] if per_srv else None))
    write_csv(os.path.join(data_dir, "probe-effect-cpu.csv"),
              ["endpoint", "runs", "endpoint_cpu_s_per_m_records_median", "influxd_cpu_s_per_m_records_median"],
              cpu_rows)

    fig, (ax_p, ax_c, ax_v) = plt.subplots(1, 3, figsize=(16, 4.8), gridspec_kw={"width_ratios": [1.5, 1, 0.8]})
    panel_pct(ax_p, runs, rows, noop)
    panel_cpu(ax_c, cpu_rows)
    vrows = panel_valkey(ax_v, valkey)
    if vrows:
        write_csv(os.path.join(data_dir, "valkey-probe-cost.csv"),
                  ["probes", "runs", "req_per_s_median", "req_per_s_min", "req_per_s_max", "pct_of_none_median",
                   "pct_of_none_min", "pct_of_none_max"], vrows)
    fig.suptitle("Fig. 13 - Probe effect: live RocksDB P3 (syscall + page-cache probes) sending its telemetry "
                 "to an endpoint")
    fig.tight_layout()
    info = RunInfo(log_dir)
    absolute = ", ".join(f"{ENDPOINTS.get(r[0], r[0]).split(chr(10))[0]} {r[2] / 1e3:.0f} k" for r in rows)
    caption = add_caption(fig, info.caption(
        "Fig. 13: (a) RocksDB ops/s of the live workload (its own eBPF probes on, not a recording) with each "
        "endpoint, as % of the noop endpoint; endpoints alternated round by round; measured medians "
        f"(ops/s: {absolute or 'none'}) beside the published ones (noop "
        f"{published.PROBE_EFFECT_NOOP_OPS / 1e6:.2f} M ops/s), FishStore only as published; (b) CPU seconds each "
        "endpoint spent per million records received (InfluxDB: influx-app plus influxd), which is what the "
        "probe effect costs a host with spare cores; (c) Valkey requests/s with the server's probes on, "
        "telemetry discarded", knobs=("pe_rounds", "pe_duration_s", "pe_warmup_s", "valkey_pe_rounds",
                                      "valkey_pe_s")))
    png = save(fig, out, STEM)
    nruns = sum(len(v) for v in runs.values())
    detail = f"{len(eps)} endpoints ({', '.join(eps)}), {nruns} runs, CPU of {len(cpu_rows)} endpoints"
    detail += f", Valkey {len(vrows)} probe sets" if vrows else ", no Valkey runs"
    if runs and NOOP not in runs:
        detail += ", no noop baseline so no % of noop (make pe-rocksdb-noop)"
    return [Result(FIG, TITLE, True, detail, png, caption)]


def main(argv=None):
    return run_one(build, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
