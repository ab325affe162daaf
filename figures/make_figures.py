"""Draw every figure that has data; one line per figure says what was drawn or why it was skipped.

    python figures/make_figures.py [--logs evaluation-output] [--out figures] [--strict]

CSV go to OUT/data/, figures (PNG and PDF) to OUT/figures/, and OUT/figures/README.md
lists every figure with its caption (machine, scale, live or synthetic input), or
why it was not drawn. Bad log lines are skipped with a warning on stderr; an
unexpected error in one figure is reported on its line and the others are still
drawn (--strict stops instead).
"""

import os
import sys
import traceback

import fig_ablation
import fig_e2e
import fig_ingest_scaling
import fig_probe_effect
from plotutil import Result, arg_parser, out_dirs, rel

# (figure ids, title, build function), in figure order.
FIGURES = [
    ("fig10-12", "end to end", fig_e2e.build),
    ("fig13", "probe effect", fig_probe_effect.build),
    ("fig14", "ingest scaling", fig_ingest_scaling.build),
    ("fig15/16", "ablation", fig_ablation.build),
]


def main(argv=None):
    args = arg_parser(__doc__.splitlines()[0]).parse_args(argv)
    print(f"figures: logs from {rel(args.logs)}, output to {rel(args.out)}/data and {rel(args.out)}/figures")
    failed = 0
    everything = []
    for fig, title, build in FIGURES:
        try:
            results = build(args.logs, args.out)
        except Exception as e:  # one broken figure must not hide the others
            if args.strict:
                raise
            traceback.print_exc()
            results = [Result(fig, title, False, f"error in the figure script: {type(e).__name__}: {e}")]
            failed += 1
        for r in results:
            print(r.line(), flush=True)
        everything += results
    readme = write_readme(everything, args.logs, args.out)
    print(f"captions: {rel(readme)}")
    return 1 if failed and args.strict else 0


def write_readme(results, logs, out):
    """OUT/figures/README.md: each figure's caption, or why it is missing."""
    _, fig_dir = out_dirs(out)
    os.makedirs(fig_dir, exist_ok=True)
    path = os.path.join(fig_dir, "README.md")
    text = ["# Figures", "", f"Drawn by `make figures` (figures/make_figures.py) from the logs in `{rel(logs)}`. "
            "Published numbers (64-core server) are labelled so and never merged with measured ones.", ""]
    for r in results:
        if r.drawn:
            stem = os.path.splitext(os.path.basename(r.path))[0]
            text += [f"## {stem}", "", f"![{stem}]({stem}.png) ([PDF]({stem}.pdf))", "",
                     r.caption or r.detail, ""]
        else:
            text += [f"## {r.fig} {r.title}: not drawn", "", r.detail, ""]
    with open(path, "w") as f:
        f.write("\n".join(text))
    return path


if __name__ == "__main__":
    sys.exit(main())
