#!/usr/bin/env bash
# Demo of the telemetry pipeline (make demo-pipeline):
#   1. writes a short SYNTHETIC rocksdb-p1 recording,
#   2. starts loom-app with --query rocksdb-p1 --query-interval-s 30 --query-count 2,
#   3. replays the recording (looped) for 70 s,
#   4. stops loom-app with Ctrl-C (SIGINT) and prints the answers and latencies.
# Takes about 75 s. Binaries come from $CARGO_RELEASE_DIR (default target/release).
set -euo pipefail

BIN=${CARGO_RELEASE_DIR:-target/release}
ADDR=${DEMO_ADDR:-127.0.0.1:7899}
RATE=${DEMO_RATE:-20000}
REPLAY_S=${DEMO_REPLAY_S:-70}
TMP=${TMP_DATA_DIR:-tmp-data}
WORK=$(mkdir -p "$TMP" && mktemp -d "$TMP/demo-pipeline.XXXXXX")
REC=$WORK/rocksdb-p1
APP_LOG=$WORK/loom-app.log
APP_PID=

cleanup() {
    if [ -n "$APP_PID" ] && kill -0 "$APP_PID" 2>/dev/null; then
        kill -INT "$APP_PID" 2>/dev/null || true
        wait "$APP_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

for b in replay tcp-replay loom-app; do
    [ -x "$BIN/$b" ] || { echo "missing $BIN/$b: run make e2e-build" >&2; exit 1; }
done

echo "== 1. synthetic recording"
"$BIN/replay" gen --workload rocksdb --phase p1 --duration-s 30 --rate "$RATE" --seed 7 --output "$REC"

echo "== 2. loom-app on $ADDR"
"$BIN/loom-app" --addr "$ADDR" --loom-path "$WORK/store" --query rocksdb-p1 \
    --query-interval-s 30 --query-count 2 --report-interval-s 10 >"$APP_LOG" 2>&1 &
APP_PID=$!

echo "== 3. replay for ${REPLAY_S} s"
"$BIN/tcp-replay" --file-path "$REC" --addr "$ADDR" --duration-s "$REPLAY_S" --connect-timeout-s 30 \
    | awk 'NR % 10 == 1 || /Replay done/'

echo "== 4. stop loom-app"
sleep 1
kill -INT "$APP_PID"
wait "$APP_PID" || true
APP_PID=
echo "-- loom-app output:"
cat "$APP_LOG" | grep -v '^\[' || true
echo "-- answers:"
grep -E '^Query ' "$APP_LOG" || { echo "no query answers (see above)"; exit 1; }
