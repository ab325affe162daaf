#!/usr/bin/env bash
# /write and dashboard benchmark (make write-bench): the same line protocol
# (WRITE_HOSTS hosts, one point each every WRITE_STEP_MS over WRITE_DATA_S
# seconds, 5000 points per body) from 1 and from 4 concurrent writers into a
# fresh loom-app and into a fresh influxd, one run at a time; zero loss
# checked; then the 8 panel statements of a Grafana-shaped dashboard over
# the data's hour, timed on each. The load average is printed before each run.
#
# Environment: BIN (release dir), TMP_DATA_DIR, WRITE_WRITERS ("1 4"),
# WRITE_HOSTS (8), WRITE_DATA_S (3600), WRITE_STEP_MS (100), WRITE_REPEAT (5),
# WRITE_APP_FLAGS, WRITE_HTTP (loom-app's API), INFLUX_HTTP, INFLUX_RPC, INFLUX_DIR.
set -euo pipefail

BIN=${BIN:-target/release}
TMP=${TMP_DATA_DIR:-tmp-data}/write-bench
WRITERS=${WRITE_WRITERS:-1 4}
HOSTS=${WRITE_HOSTS:-8}
DATA_S=${WRITE_DATA_S:-3600}
STEP_MS=${WRITE_STEP_MS:-100}
REPEAT=${WRITE_REPEAT:-5}
APP_FLAGS=${WRITE_APP_FLAGS:-}
HTTP=${WRITE_HTTP:-127.0.0.1:18186}
INFLUX_HTTP=${INFLUX_HTTP:-127.0.0.1:8086}
INFLUX_RPC=${INFLUX_RPC:-127.0.0.1:8088}
INFLUX_DIR=${INFLUX_DIR:-${TMP_DATA_DIR:-tmp-data}/influxdb}
mkdir -p "$TMP"

for b in loom-app examples/write-load; do
  [ -x "$BIN/$b" ] || { echo "write-bench: $BIN/$b missing: cargo build --release -p loom-app --bins --example write-load" >&2; exit 1; }
done

app_pid=""
stop_app() {
  if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then
    kill -INT "$app_pid"
    wait "$app_pid" || true
  fi
  app_pid=""
}
trap stop_app EXIT

load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
args=(--hosts "$HOSTS" --data-seconds "$DATA_S" --step-ms "$STEP_MS" --repeat "$REPEAT")

echo "== write-bench hosts=$HOSTS data_s=$DATA_S step_ms=$STEP_MS writers=[$WRITERS] $(date -u +%FT%TZ) $(nproc) cores"
for w in $WRITERS; do
  store="$TMP/loom-$w"
  log="$TMP/loom-app-$w.log"
  rm -rf "$store"
  echo "-- loom-app, $w writers"; load
  "$BIN/loom-app" --addr 127.0.0.1:0 --http "$HTTP" --otlp-grpc off --otlp-http off \
    --loom-path "$store" --report-interval-s 5 $APP_FLAGS >"$log" 2>&1 &
  app_pid=$!
  for _ in $(seq 1 100); do grep -q "^InfluxDB API on" "$log" && break; sleep 0.1; done
  grep -q "^InfluxDB API on" "$log" || { echo "write-bench: loom-app did not start:" >&2; tail "$log" >&2; exit 1; }
  "$BIN/examples/write-load" --url "http://$HTTP" --writers "$w" "${args[@]}"
  stop_app

  echo "-- influxd, $w writers"; load
  bash baselines/influxdb/influxd.sh stop "$INFLUX_DIR" >/dev/null 2>&1 || true
  rm -rf "$INFLUX_DIR"
  bash baselines/influxdb/influxd.sh start "$INFLUX_DIR" "$INFLUX_HTTP" "$INFLUX_RPC"
  "$BIN/examples/write-load" --url "http://$INFLUX_HTTP" --writers "$w" "${args[@]}"
  bash baselines/influxdb/influxd.sh stop "$INFLUX_DIR"
done
