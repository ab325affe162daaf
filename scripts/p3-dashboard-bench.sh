#!/usr/bin/env bash
# Grafana dashboard over a live P3 recording (make p3-dashboard-bench):
# 8 panel statements on the data model's measurements (kv, syscall,
# pagecache; regex template variables, fill(0), arithmetic, derivative),
# timed on loom-app and on influxd holding the same points, then on
# loom-app alone over a full hour.
#
# The recording (make record-rocksdb-p3) is looped by tcp-replay --loops,
# each loop shifted past the previous one, so N loops of a 20 s recording
# are N × 20 s of live P3 data, stored under the records' own times
# (--timestamps event --event-offset-us 0) by both systems:
#   1. side by side: BOTH_LOOPS loops into influx-app --complete-data (line
#      protocol to influxd's /write) and into loom-app; per-measurement
#      counts compared (zero loss), then each panel REPEAT times on each,
#      alternating, answers compared;
#   2. Loom alone: HOUR_LOOPS loops (an hour of data) into a fresh loom-app,
#      each panel REPEAT times.
# Each panel's $timeFilter is the data's whole span; $__interval is
# BOTH_INTERVAL / HOUR_INTERVAL. The load average is printed before each
# phase and with each panel line.
#
# loom-app drops batches when its ingest queue is full (by design, counted),
# so the hour is replayed paced, HOUR_SPEED times the recorded rate, and the
# records received and dropped are printed: the hour's panels are only
# meaningful with 0 dropped.
#
# Environment: REUSE_HOUR (1: time the panels on the hour's store a previous
# run left, without replaying it again), BIN (release dir), TMP_DATA_DIR, RECORDING (recordings/rocksdb-p3),
# PHASES ("both hour"), BOTH_LOOPS (3), HOUR_LOOPS (0 = as many as make an
# hour of the recording), HOUR_SPEED (6),
# BOTH_INTERVAL (1s), HOUR_INTERVAL (5s), REPEAT (5), HTTP, TCP, INFLUX_HTTP,
# INFLUX_RPC, INFLUX_TCP, INFLUX_DIR, DASH_APP_FLAGS (extra loom-app flags,
# e.g. --http-statement-threads 1 for one thread per statement).
set -euo pipefail

BIN=${BIN:-target/release}
TMP=${TMP_DATA_DIR:-tmp-data}/p3-dashboard
RECORDING=${RECORDING:-recordings/rocksdb-p3}
BOTH_LOOPS=${BOTH_LOOPS:-3}
HOUR_LOOPS=${HOUR_LOOPS:-0}
BOTH_INTERVAL=${BOTH_INTERVAL:-1s}
HOUR_INTERVAL=${HOUR_INTERVAL:-5s}
REPEAT=${REPEAT:-5}
PHASES=${PHASES:-both hour}
HOUR_SPEED=${HOUR_SPEED:-6}
APP_FLAGS=${DASH_APP_FLAGS:-}
HTTP=${HTTP:-127.0.0.1:18286}
TCP=${TCP:-127.0.0.1:17978}
INFLUX_HTTP=${INFLUX_HTTP:-127.0.0.1:18087}
INFLUX_RPC=${INFLUX_RPC:-127.0.0.1:18089}
INFLUX_TCP=${INFLUX_TCP:-127.0.0.1:17979}
INFLUX_DIR=${INFLUX_DIR:-$TMP/influxdb}
mkdir -p "$TMP"

for b in loom-app influx-app tcp-replay; do
  [ -x "$BIN/$b" ] || { echo "p3-dashboard-bench: $BIN/$b missing: cargo build --release --workspace --bins" >&2; exit 1; }
done
[ -s "$RECORDING" ] || { echo "p3-dashboard-bench: no recording at $RECORDING: make record-rocksdb-p3 RECORD_DURATION=20" >&2; exit 1; }

# shellcheck source=scripts/lib/loom-app.sh
source "$(dirname "$0")/lib/loom-app.sh"
stop_all() {
  stop_app
  bash baselines/influxdb/influxd.sh stop "$INFLUX_DIR" >/dev/null 2>&1 || true
}
trap stop_all EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
elapsed() { python3 -c "import time; print(f'{time.time() - $1:.1f}')"; }

# q URL STATEMENT: the answer's JSON (epoch ns).
q() {
  curl -sS -XPOST "http://$1/query" --data-urlencode "db=p3" --data-urlencode "epoch=ns" \
    --data-urlencode "q=$2"
}
# ms URL STATEMENT: milliseconds one request took (the answer is discarded).
ms() {
  curl -sS -o /dev/null -w '%{time_total}' -XPOST "http://$1/query" --data-urlencode "db=p3" \
    --data-urlencode "epoch=ns" --data-urlencode "q=$2" | awk '{printf "%.1f", $1 * 1000}'
}
# count URL MEASUREMENT FIELD
count() {
  q "$1" "SELECT count(\"$3\") FROM \"$2\"" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["series"][0]["values"][0][1] if "series" in r else 0)'
}
# span URL: "T0 T1", the data's first and last time in ns (of the page
# cache events: the smallest measurement, so this stays fast on an hour).
span() {
  local a b
  a=$(q "$1" 'SELECT first("pfn") FROM "pagecache"' | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["series"][0]["values"][0][0])')
  b=$(q "$1" 'SELECT last("pfn") FROM "pagecache"' | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["series"][0]["values"][0][0])')
  echo "$a $b"
}

# The panels: Grafana's query-editor shapes ($timeFilter, $__interval,
# template variables as /^(a|b)$/) on the data model's measurements. The
# replayed recording's series carry op (kv) and name (syscall) tags; the
# agent's host/comm tags are absent from a rocksdb-workload recording.
panels() {
  local tf="time >= $1 and time <= $2" iv=$3
  cat <<EOF
ops by op, fill(0)|SELECT count("duration_us") FROM "kv" WHERE ("op" =~ /^(read|write)$/) AND $tf GROUP BY time($iv), "op" fill(0)
max read latency ms (arithmetic)|SELECT max("duration_us") / 1000 FROM "kv" WHERE ("op" =~ /^read$/) AND $tf GROUP BY time($iv) fill(null)
p99 read latency|SELECT percentile("duration_us", 99) FROM "kv" WHERE "op" = 'read' AND $tf GROUP BY time($iv) fill(none)
syscalls by name, fill(0)|SELECT count("duration_us") FROM "syscall" WHERE ("name" =~ /^(pread64|pwrite64|fsync|fdatasync)$/) AND $tf GROUP BY time($iv), "name" fill(0)
mean syscall latency by name|SELECT mean("duration_us") FROM "syscall" WHERE ("name" =~ /^(pread64|pwrite64)$/) AND $tf GROUP BY time($iv), "name" fill(null)
page-cache insertions, fill(0)|SELECT count("pfn") FROM "pagecache" WHERE $tf GROUP BY time($iv) fill(0)
read latency derivative|SELECT derivative(mean("duration_us"), 1s) FROM "kv" WHERE ("op" =~ /^(read)$/) AND $tf GROUP BY time($iv) fill(none)
mean pread latency (sum / count)|SELECT sum("duration_us") / count("duration_us") FROM "syscall" WHERE "name" =~ /pread/ AND $tf GROUP BY time($iv) fill(none)
EOF
}

# time_panels LABEL T0 T1 INTERVAL URL...: each panel REPEAT times on each
# URL (alternating), PANEL lines with median and worst ms per system.
time_panels() {
  local label=$1 t0=$2 t1=$3 iv=$4
  shift 4
  local k=0
  while IFS='|' read -r name stmt; do
    k=$((k + 1))
    local line="PANEL $label $k \"$name\""
    for url in "$@"; do
      local times=()
      for _ in $(seq 1 "$REPEAT"); do times+=("$(ms "$url" "$stmt")"); done
      local sorted med worst
      sorted=$(printf '%s\n' "${times[@]}" | sort -g)
      med=$(echo "$sorted" | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {print}')
      worst=$(echo "$sorted" | tail -n 1)
      local who=loom-app
      [ "$url" = "$INFLUX_HTTP" ] && who=influxd
      line+=" $who median_ms=$med worst_ms=$worst"
    done
    if [ $# -eq 2 ]; then
      local same
      same=$(python3 - "$(q "$1" "$stmt")" "$(q "$2" "$stmt")" <<'PY'
import json, sys
def eq(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(eq(a[k], b[k]) for k in a)
    return a == b
print("equal" if eq(json.loads(sys.argv[1]), json.loads(sys.argv[2])) else "DIFFERENT")
PY
)
      line+=" answers=$same"
    fi
    echo "$line load=$(load | tr ' ' ,)"
  done < <(panels "$t0" "$t1" "$iv")
}

# start_loom STORE LOG: a fresh store (REUSE_HOUR=1 for the hour: the one
# a previous run left, as it is).
start_loom() {
  [ "${REUSE:-0}" = 1 ] || rm -rf "$1"
  # shellcheck disable=SC2086 # APP_FLAGS is a list of flags
  start_loom_app p3-dashboard-bench "$2" --addr "$TCP" --http "$HTTP" --otlp-grpc off --otlp-http off \
    --loom-path "$1" --timestamps event --event-offset-us 0 --report-interval-s 10 $APP_FLAGS
}

# wait_stable URL: until kv's count stops changing (the reorder window
# has released everything).
wait_stable() {
  local last=-1 now
  while :; do
    now=$(count "$1" kv duration_us)
    [ "$now" = "$last" ] && break
    last=$now
    sleep 3
  done
}

echo "== p3-dashboard-bench recording=$RECORDING both_loops=$BOTH_LOOPS hour_loops=$HOUR_LOOPS repeat=$REPEAT $(date -u +%FT%TZ) $(nproc) cores"
"$BIN/tcp-replay" --help >/dev/null

# received_dropped LOG: loom-app's totals of records received and dropped.
received_dropped() {
  grep -o 'total received [0-9]* dropped [0-9]*' "$1" | tail -n 1
}

# 1. Side by side.
if [[ " $PHASES " == *" both "* ]]; then
echo "-- influxd: $BOTH_LOOPS loops through influx-app (load $(load))"
stop_all
rm -rf "$INFLUX_DIR"
bash baselines/influxdb/influxd.sh start "$INFLUX_DIR" "$INFLUX_HTTP" "$INFLUX_RPC"
start=$(date +%s.%N)
"$BIN/influx-app" --addr "$INFLUX_TCP" --influx-url "http://$INFLUX_HTTP" --db p3 --complete-data \
  --timestamps event --event-offset-us 0 --stop-after-connections 1 --machine-output \
  >"$TMP/influx-app.log" 2>&1 &
iapp=$!
"$BIN/tcp-replay" --file-path "$RECORDING" --addr "$INFLUX_TCP" --no-wait --loops "$BOTH_LOOPS" | tail -n 1
wait "$iapp"
grep '^STATS' "$TMP/influx-app.log" || true
echo "influxd load took $(elapsed "$start") s"

echo "-- loom-app: $BOTH_LOOPS loops (load $(load))"
start=$(date +%s.%N)
start_loom "$TMP/loom-both" "$TMP/loom-both.log"
"$BIN/tcp-replay" --file-path "$RECORDING" --addr "$TCP" --no-wait --loops "$BOTH_LOOPS" | tail -n 1
wait_stable "$HTTP"
echo "loom-app load took $(elapsed "$start") s ($(received_dropped "$TMP/loom-both.log"))"
for m in "kv duration_us" "syscall duration_us" "pagecache pfn"; do
  set -- $m
  a=$(count "$INFLUX_HTTP" "$1" "$2")
  b=$(count "$HTTP" "$1" "$2")
  echo "COUNT $1 influxd=$a loom-app=$b $([ "$a" = "$b" ] && echo equal || echo DIFFERENT)"
done
read -r t0 t1 < <(span "$HTTP")
echo "span: $t0 .. $t1 ns ($(( (t1 - t0) / 1000000000 )) s), interval $BOTH_INTERVAL"
time_panels both "$t0" "$t1" "$BOTH_INTERVAL" "$HTTP" "$INFLUX_HTTP"
if [ "$HOUR_LOOPS" = 0 ]; then
  # As many loops as make an hour: one loop is the span / BOTH_LOOPS.
  HOUR_LOOPS=$(python3 -c "import math; print(math.ceil(3600e9 * $BOTH_LOOPS / ($t1 - $t0)))")
fi
stop_all
fi

# 2. Loom alone over an hour.
[[ " $PHASES " == *" hour "* ]] || exit 0
[ "$HOUR_LOOPS" = 0 ] && HOUR_LOOPS=172
echo "-- loom-app alone: $HOUR_LOOPS loops (load $(load))"
start=$(date +%s.%N)
if [ "${REUSE_HOUR:-0}" = 1 ] && [ -d "$TMP/loom-hour" ]; then
  echo "(the hour's store of the previous run, reopened)"
  REUSE=1 start_loom "$TMP/loom-hour" "$TMP/loom-hour-reopened.log"
else
  start_loom "$TMP/loom-hour" "$TMP/loom-hour.log"
  "$BIN/tcp-replay" --file-path "$RECORDING" --addr "$TCP" --speed "$HOUR_SPEED" --loops "$HOUR_LOOPS" | tail -n 1
fi
wait_stable "$HTTP"
echo "loom-app load took $(elapsed "$start") s ($(received_dropped "$TMP/loom-hour.log"))"
for m in "kv duration_us" "syscall duration_us" "pagecache pfn"; do
  set -- $m
  echo "COUNT $1 loom-app=$(count "$HTTP" "$1" "$2")"
done
read -r t0 t1 < <(span "$HTTP")
echo "span: $t0 .. $t1 ns ($(( (t1 - t0) / 1000000000 )) s), interval $HOUR_INTERVAL"
time_panels hour "$t0" "$t1" "$HOUR_INTERVAL" "$HTTP"
du -sh "$TMP/loom-hour" | sed 's/^/store: /'
stop_app
