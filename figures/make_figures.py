"""Draw every figure that has data; one line per figure says what was drawn or why it was skipped.

    python figures/make_figures.py [--logs evaluation-output] [--out figures] [--strict]

CSV go to OUT/data/, figures (PNG and PDF) to OUT/figures/. Bad log lines are
skipped with a warning on stderr; an unexpected error in one figure is reported
on its line and the others are still drawn (--strict stops instead).
"""

import sys
import traceback

import fig_ablation
import fig_e2e
import fig_ingest_scaling
import fig_probe_effect
from plotutil import Result, arg_parser, rel

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
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
