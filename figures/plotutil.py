"""Shared pieces of the figure scripts: paths, CSV, summaries, saving, published numbers."""

import argparse
import csv
import os
import statistics
import sys
import textwrap
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

import published  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_LOGS = os.path.join(REPO, "evaluation-output")

# Published reference numbers live in published.py (stdlib only, shared with the
# summary table); the names below keep the figure scripts short.
PUBLISHED_LABEL = published.LABEL
PUBLISHED_PROBE_EFFECT_PCT = published.PROBE_EFFECT_PCT
PUBLISHED_PROBE_EFFECT_NOOP_OPS = published.PROBE_EFFECT_NOOP_OPS
PUBLISHED_PROBE_EFFECT_LOOM_OPS = published.PROBE_EFFECT_LOOM_OPS
PUBLISHED_INGEST_RPS = published.INGEST_RPS
PUBLISHED_TIMERANGE_QUERY_S = published.TIMERANGE_QUERY_S


@dataclass
class Result:
    """Outcome of one figure: drawn (with a short description) or skipped (with why)."""
    fig: str
    title: str
    drawn: bool
    detail: str
    path: str = ""
    caption: str = ""

    def line(self, root=REPO):
        if self.drawn:
            return f"{self.fig} {self.title}: {self.detail} -> {rel(self.path, root)}"
        return f"{self.fig} {self.title}: skipped, {self.detail}"


def rel(path, root=REPO):
    """`path` relative to the repository when inside it (shorter messages)."""
    p = os.path.abspath(path)
    return os.path.relpath(p, root) if p.startswith(root + os.sep) else p


def warn(msg):
    print(f"warning: {msg}", file=sys.stderr)


def summary(values):
    """(median, min, max, n) of a non-empty list of numbers."""
    return statistics.median(values), min(values), max(values), len(values)


def errbars(medians, lows, highs):
    """Asymmetric yerr for matplotlib from medians and min/max."""
    return [[m - lo for m, lo in zip(medians, lows)], [hi - m for m, hi in zip(medians, highs)]]


def write_csv(path, header, rows):
    """Writes rows (sequences) under `header`; creates the folder."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow(["" if v is None else (f"{v:.10g}" if isinstance(v, float) else v) for v in r])


def out_dirs(out):
    """(data dir, figures dir) under the output root."""
    return os.path.join(out, "data"), os.path.join(out, "figures")


def save(fig, out, stem):
    """Saves `fig` as <out>/figures/<stem>.png and .pdf; returns the PNG path."""
    _, fig_dir = out_dirs(out)
    os.makedirs(fig_dir, exist_ok=True)
    png = os.path.join(fig_dir, stem + ".png")
    fig.savefig(png, dpi=150, bbox_inches="tight")
    fig.savefig(os.path.join(fig_dir, stem + ".pdf"), bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)
    return png


def add_caption(fig, text, width=None, y=-0.01):
    """Writes `text` under the figure (its top at figure height `y`), wrapped to `width`
    characters (default: the figure's width in 7.5-point characters); returns it for the README."""
    width = width or int(fig.get_figwidth() * 17)
    wrapped = "\n".join(textwrap.wrap(text, width))
    fig.text(0.01, y, wrapped, ha="left", va="top", fontsize=7.5, color="0.2", wrap=False)
    return text


def label_log_y(ax):
    """Numbers on the minor ticks of a log y axis spanning under two decades (else it may show one label)."""
    lo, hi = ax.get_ylim()  # autoscales first
    if lo > 0 and hi / lo < 100:
        def one_two_five(v, _pos):
            lead = f"{v:.0e}"[0]
            return f"{v:g}" if lead in "125" else ""
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(one_two_five))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(one_two_five))


def note(ax, text):
    """Small grey footnote in the lower left of an axes."""
    ax.text(0.01, 0.01, text, transform=ax.transAxes, fontsize=7, color="0.35", va="bottom", ha="left")


def log_y_if_positive(ax, values, min_ratio=1.0):
    """Log y scale when every value is > 0 and the largest is at least `min_ratio` times the
    smallest; returns whether it was set."""
    values = [v for v in values if v is not None]
    if values and min(values) > 0 and max(values) >= min_ratio * min(values):
        ax.set_yscale("log")
        return True
    return False


def arg_parser(description):
    """Common flags: --logs (input folder) and --out (root of data/ and figures/)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--logs", default=DEFAULT_LOGS, help="folder of the logs (default: evaluation-output/)")
    p.add_argument("--out", default=HERE, help="output root: CSV to OUT/data, figures to OUT/figures (default: figures/)")
    p.add_argument("--strict", action="store_true", help="let an unexpected error in a figure script stop the run")
    return p


def run_one(build, argv=None, description=""):
    """main() of a single-figure script: parse flags, build, print the one result line."""
    args = arg_parser(description).parse_args(argv)
    for r in build(args.logs, args.out):
        print(r.line())
    return 0
