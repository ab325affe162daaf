#!/usr/bin/env bash
# Highest replay speed loom-app ingests without dropping (make e2e-speed-sweep).
#   speed-sweep.sh RECORDING "SPEEDS" SECONDS QUERY
# For each speed: a fresh loom-app (answering QUERY every 5 s while ingesting),
# tcp-replay of RECORDING at that speed for SECONDS, then loom-app's final line.
# Prints one line per speed: `speed=<x> records/s=<r> dropped=<d> (<p> %)`.
set -euo pipefail
BIN=${BIN:-target/release}
TMP=${TMP_DATA_DIR:-tmp-data}
ADDR=${SWEEP_ADDR:-127.0.0.1:7901}
rec=$1; speeds=$2; secs=$3; query=$4
mkdir -p "$TMP"
for s in $speeds; do
    work=$(mktemp -d "$TMP/sweep.XXXXXX")
    "$BIN/loom-app" --addr "$ADDR" --loom-path "$work/store" --query "$query" \
        --query-interval-s 5 --query-count 1000 --report-interval-s 5 \
        --stop-after-connections 1 > "$work/app.log" 2>&1 &
    app=$!
    "$BIN/tcp-replay" --file-path "$rec" --addr "$ADDR" --speed "$s" --duration-s "$secs" \
        --connect-timeout-s 30 > "$work/replay.log" 2>&1 || true
    wait "$app" || true
    final=$(grep -E '^Final' "$work/app.log" || echo "Final: missing")
    recv=$(sed -nE 's/.*records received ([0-9]+), dropped ([0-9]+) \(([0-9.]+) %\).*/\1 \2 \3/p' <<<"$final")
    read -r n d p <<<"${recv:-0 0 0}"
    lat=$(grep -E '^Query Latency' "$work/app.log" | tail -n 1 || true)
    behind=$(grep -oE 'max behind [0-9.]+ ms' "$work/replay.log" || true)
    echo "speed=$s records/s=$((n / secs)) dropped=$d ($p %) ${behind:+($behind)} last: ${lat:-no query}"
    rm -rf "$work"
done
