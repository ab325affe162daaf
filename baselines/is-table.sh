#!/usr/bin/env bash
# Markdown table of the ingest-scaling logs: median records/s and MB/s per store and
# payload size, read from the `db=... records/s=... MB/s=...` lines that
# `ingest-scaling` prints (one per run) in evaluation-output/is-<db>[<threads>]-<size>.
#
# usage: baselines/is-table.sh [--last N] [--threads T] [--sizes "8 64 256 1024"] [LOG_DIR]
#   --last N     use only the last N runs of each log (default: all runs)
#   --threads T  thread count of the rocksdb/file logs to read (default 1)
set -euo pipefail

last=0
threads=1
sizes="8 64 256 1024"
while [ $# -gt 0 ]; do
  case "$1" in
    --last) last="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "is-table.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
dir="${1:-evaluation-output}"

# Median of the numbers on stdin (one per line); empty input prints nothing.
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit
    if (NR % 2) printf "%.2f", v[(NR + 1) / 2]
    else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Value of field KEY= in each result line on stdin.
field() {
  awk -v key="$1" '{ for (i = 1; i <= NF; i++) if (index($i, key "=") == 1) print substr($i, length(key) + 2) }'
}

echo "| db | threads | size (B) | runs | median records/s | median MB/s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for db in mach mach-index lmdb "rocksdb$threads" "file$threads"; do
  case "$db" in
    rocksdb*|file*) t="$threads" ;;
    *) t=1 ;;
  esac
  for size in $sizes; do
    log="$dir/is-$db-$size"
    [ -f "$log" ] || continue
    lines=$(grep '^db=' "$log" || true)
    if [ "$last" -gt 0 ] && [ -n "$lines" ]; then
      lines=$(printf '%s\n' "$lines" | tail -n "$last")
    fi
    runs=$(printf '%s' "$lines" | grep -c '^db=' || true)
    [ "$runs" -gt 0 ] || continue
    rps=$(printf '%s\n' "$lines" | field 'records/s' | median)
    mbps=$(printf '%s\n' "$lines" | field 'MB/s' | median)
    printf '| %s | %s | %s | %s | %.0f | %.1f |\n' "$db" "$t" "$size" "$runs" "$rps" "$mbps"
  done
done
