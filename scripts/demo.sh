#!/usr/bin/env bash
# make demo: real telemetry through the whole pipeline in about three minutes.
#
#   1. a recording: LIVE when eBPF can load here (root, BTF, tracefs): the
#      RocksDB workload runs 20 s with the syscall probe attached (phase P2:
#      KV op records + syscall records); otherwise a SYNTHETIC P2 recording;
#   2. loom-app listens and answers the P1 and P2 questions (max and p99.99
#      of KV read latency and of pread64 latency over [now-80 s, now-20 s])
#      twice while data arrives;
#   3. tcp-replay sends the recording at its recorded pace (looped) for 90 s;
#   4. everything stops cleanly and the answers are summarised.
# Every step prints as it runs. Binaries come from $BIN (target/release).
# DEMO_SYNTHETIC=1 skips the live recording (make demo-pipeline).
set -euo pipefail

BIN=${BIN:-target/release}
TMP=${TMP_DATA_DIR:-tmp-data}
ADDR=${DEMO_ADDR:-127.0.0.1:7898}
RECORD_S=${DEMO_RECORD_S:-20}
REPLAY_S=${DEMO_REPLAY_S:-90}
QUERY_EVERY_S=${DEMO_QUERY_EVERY_S:-42}
mkdir -p "$TMP"
WORK=$(mktemp -d "$TMP/demo.XXXXXX")
REC=$WORK/rocksdb-p2
APP_PID=

cleanup() {
    if [ -n "$APP_PID" ] && kill -0 "$APP_PID" 2>/dev/null; then
        kill -INT "$APP_PID" 2>/dev/null || true
        wait "$APP_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

for b in replay tcp-replay data-stats loom-app rocksdb-workload; do
    [ -x "$BIN/$b" ] || { echo "demo: missing $BIN/$b (make build)" >&2; exit 1; }
done

echo "== 1/4 recording telemetry"
kind=SYNTHETIC
if [ -n "${DEMO_SYNTHETIC:-}" ]; then
    echo "   DEMO_SYNTHETIC is set: using a SYNTHETIC recording"
elif [ "$(id -u)" -eq 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
    echo "   live RocksDB workload with the syscall eBPF probe, ${RECORD_S} s (+3 s warmup)"
    if "$BIN/rocksdb-workload" --instances 2 --threads-per-instance 4 --syscalls \
        --warmup-seconds 3 --duration-seconds "$RECORD_S" --no-drop-caches \
        --rocksdb-path "$WORK/rocksdb" --output-path "$REC" 2>&1 \
        | sed -u 's/^/   [rocksdb-workload] /' | awk 'NR % 5 == 1 || /Average|Total|error|Error/'; then
        [ -s "$REC" ] && kind=LIVE
    fi
    rm -rf "$WORK/rocksdb"
    [ "$kind" = LIVE ] || echo "   live recording failed (see above); falling back to a synthetic one"
else
    echo "   eBPF needs root and kernel BTF here; using a SYNTHETIC recording instead"
fi
if [ "$kind" = SYNTHETIC ]; then
    "$BIN/replay" gen --workload rocksdb --phase p2 --duration-s "$RECORD_S" --rate 100000 \
        --seed 7 --output "$REC" | sed 's/^/   /'
fi
echo "   recording ($kind): $(du -h "$REC" | cut -f1)"
"$BIN/data-stats" "$REC" | sed 's/^/   /' | head -n 20

echo "== 2/4 loom-app on $ADDR (queries every ${QUERY_EVERY_S} s)"
"$BIN/loom-app" --addr "$ADDR" --loom-path "$WORK/store" --query rocksdb-p1,rocksdb-p2 \
    --query-interval-s "$QUERY_EVERY_S" --query-count 2 --report-interval-s 10 \
    > >(grep --line-buffered -v 'declared source' | sed -u 's/^/   [loom-app] /') 2>&1 &
APP_PID=$!
sleep 1

echo "== 3/4 replaying the $kind recording for ${REPLAY_S} s at its recorded pace"
"$BIN/tcp-replay" --file-path "$REC" --addr "$ADDR" --duration-s "$REPLAY_S" --connect-timeout-s 30 \
    | sed -u 's/^/   [tcp-replay] /' | awk 'NR % 10 == 1 || /done|Done|summary|Summary/'
sleep 2

echo "== 4/4 stopping loom-app"
kill -INT "$APP_PID" 2>/dev/null || true
wait "$APP_PID" || true
APP_PID=
echo "demo done ($kind telemetry): the answers above came from loom-app while data was flowing."
