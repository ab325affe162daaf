"""Cuts the logs of a tiny evaluation run into the test fixtures (a few KB each).

    make evaluate-small EVAL_SCALE=tiny
    python3 figures/tests/cut_fixtures.py evaluation-output figures/tests/fixtures

Lines are copied unchanged, never edited: every result line the parsers read is
kept (answers, latencies, totals, `Final:`, `Endpoint CPU:`, averages, `db=`
lines, dd's summary, run headers, recording origins), and of the repetitive
progress lines only the first and last few of each run.
"""

import os
import re
import shutil
import sys

# Logs copied into the fixtures (all that exist of these prefixes).
WANTED = re.compile(
    r"^(e2e-(mach-app|influx-app|influx-app-dropped)-(rocksdb|valkey)-p[123]"
    r"|pe-(noop|file-writer|loom|influx)(-app)?|valkey-pe-(none|syscalls|both)"
    r"|is-(mach|mach-index|lmdb|rocksdb[12]|file1)-\d+|is-dd|ab-mach-ablation-all-\d+"
    r"|record-rocksdb-p[123]|record-valkey-p[123]|replay-e2e-mach-rocksdb-p1)$")
KEEP = re.compile(
    r"^(==|Query |ANSWER|Ablation |ablation:|ingest |Final:|Endpoint CPU:|influxd CPU:|Average |Total sent|"
    r"Phase:|db=|\d+ bytes|recording |description:|batches:|source |kv/|syscall/|pagecache|packet|Backlog|"
    r"loom-app listening|influx-app listening|\[file-writer-app\] listening|Total received|connected to|Replay done|"
    r"store:|waiting for the writers|Points written)")
PROGRESS = re.compile(r"^(Count: |Records received: |Received: |\d+ Batches Generated|\[ingest-scaling\])")
PROGRESS_EDGE = 3


def cut(lines):
    """Result lines, plus the first and last PROGRESS_EDGE progress lines of every run (a run starts at `==`)."""
    out, run = [], []

    def flush():
        out.extend(run[:PROGRESS_EDGE] + run[PROGRESS_EDGE:][-PROGRESS_EDGE:])
        run.clear()

    for line in lines:
        if PROGRESS.match(line):
            run.append(line)
            continue
        if line.startswith("==") or KEEP.match(line):
            # Progress lines stay in place relative to the results they precede.
            flush()
            out.append(line)
    flush()
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    src, dest = argv[1], argv[2]
    os.makedirs(dest, exist_ok=True)
    n = 0
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if not os.path.isfile(path):
            continue
        if name == "evaluate-run.json":
            shutil.copy(path, os.path.join(dest, name))
            continue
        if not WANTED.match(name):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        kept = cut(lines)
        with open(os.path.join(dest, name), "w") as f:
            f.write("\n".join(kept) + "\n")
        n += 1
    print(f"{n} logs cut into {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
