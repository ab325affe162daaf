#!/usr/bin/env bash
# OTLP ingest benchmark (make otlp-bench): spans over OTLP/gRPC into a fresh
# loom-app from 1 and from 4 concurrent clients, zero loss checked, then the
# p99.99-of-span-duration question over the 60 s of span time; the same
# spans as line protocol into a fresh influxd through influx-app's HTTP
# client, same question. One run at a time (never two benchmarks at once).
#
# Environment: BIN (release dir), TMP_DATA_DIR, OTLP_SPANS (all clients
# together), OTLP_DATA_S, OTLP_CLIENTS ("1 4"), OTLP_ACKS ("durable queued":
# loom-app's --otlp-ack modes, run one after the other for each client
# count, so the two are measured side by side), OTLP_INFLUX (1: also
# influxd), OTLP_APP_FLAGS (extra loom-app flags, e.g. a small
# --queue-capacity to make clients back off), OTLP_GRPC / OTLP_QUERY_HTTP
# (loom-app ports), INFLUX_HTTP, INFLUX_RPC, INFLUX_DIR.
# OTLP_BEFORE_APP=/path/to/loom-app of a97dc9e^ (main before durable
# acknowledgements, issue 26's "today") adds a run of that binary (queue
# acknowledgements, its only mode) before the others for each client count,
# so durable can be compared side by side with what users had then.
set -euo pipefail

BIN=${BIN:-target/release}
TMP=${TMP_DATA_DIR:-tmp-data}/otlp-bench
SPANS=${OTLP_SPANS:-1200000}
DATA_S=${OTLP_DATA_S:-60}
CLIENTS=${OTLP_CLIENTS:-1 4}
ACKS=${OTLP_ACKS:-durable queued}
INFLUX=${OTLP_INFLUX:-1}
APP_FLAGS=${OTLP_APP_FLAGS:-}
GRPC=${OTLP_GRPC:-127.0.0.1:14317}
QUERY_HTTP=${OTLP_QUERY_HTTP:-127.0.0.1:18186}
INFLUX_HTTP=${INFLUX_HTTP:-127.0.0.1:8086}
INFLUX_RPC=${INFLUX_RPC:-127.0.0.1:8088}
INFLUX_DIR=${INFLUX_DIR:-${TMP_DATA_DIR:-tmp-data}/influxdb}
mkdir -p "$TMP"

for b in loom-app examples/otlp-load; do
  [ -x "$BIN/$b" ] || { echo "otlp-bench: $BIN/$b missing: make build" >&2; exit 1; }
done

# shellcheck source=scripts/lib/loom-app.sh
source "$(dirname "$0")/lib/loom-app.sh"
trap stop_app EXIT

echo "== otlp-bench spans=$SPANS data_s=$DATA_S clients=[$CLIENTS] acks=[$ACKS] loom-app flags=[$APP_FLAGS] $(date -u +%FT%TZ) $(nproc) cores"
# A loom-app from before durable acknowledgements: no --otlp-ack and no
# --ready-file (its gRPC port answering stands for it).
before_app() {
  local log=$1 args=() grpc=""
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --otlp-ack) shift 2; continue ;;
      --otlp-grpc) grpc=$2 ;;
    esac
    args+=("$1"); shift
  done
  "$OTLP_BEFORE_APP" "${args[@]}" >"$log" 2>&1 &
  app_pid=$!
  for _ in $(seq 1 200); do
    (exec 3<>"/dev/tcp/${grpc%:*}/${grpc##*:}") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "otlp-bench: $OTLP_BEFORE_APP did not start:" >&2; tail "$log" >&2; exit 1
}

for c in $CLIENTS; do
if [ -n "${OTLP_BEFORE_APP:-}" ]; then
  store="$TMP/loom-$c-before"
  log="$TMP/loom-app-$c-before.log"
  rm -rf "$store"
  echo "-- loom-app before durable acknowledgements ($OTLP_BEFORE_APP), $c clients"
  # shellcheck disable=SC2086 # APP_FLAGS is a list of flags
  before_app "$log" --addr 127.0.0.1:0 --http "$QUERY_HTTP" --otlp-grpc "$GRPC" --otlp-http off \
    --loom-path "$store" --query probe-effect --report-interval-s 5 $APP_FLAGS
  "$BIN/examples/otlp-load" --target loom --grpc "$GRPC" --query-url "http://$QUERY_HTTP" \
    --clients "$c" --spans "$SPANS" --data-seconds "$DATA_S"
  stop_app
  grep -E "^Final" "$log" | sed "s/^/loom-app clients=$c ack=before: /"
fi
for ack in $ACKS; do
  store="$TMP/loom-$c-$ack"
  log="$TMP/loom-app-$c-$ack.log"
  rm -rf "$store"
  echo "-- loom-app --otlp-ack $ack, $c clients"
  # shellcheck disable=SC2086 # APP_FLAGS is a list of flags
  start_loom_app otlp-bench "$log" --addr 127.0.0.1:0 --http "$QUERY_HTTP" --otlp-grpc "$GRPC" --otlp-http off \
    --loom-path "$store" --query probe-effect --report-interval-s 5 --otlp-ack "$ack" $APP_FLAGS
  "$BIN/examples/otlp-load" --target loom --grpc "$GRPC" --query-url "http://$QUERY_HTTP" \
    --clients "$c" --spans "$SPANS" --data-seconds "$DATA_S"
  stop_app
  grep -E "^Final" "$log" | sed "s/^/loom-app clients=$c ack=$ack: /"
done
done

if [ "$INFLUX" = 1 ]; then
  for c in $CLIENTS; do
    bash baselines/influxdb/influxd.sh stop "$INFLUX_DIR" >/dev/null 2>&1 || true
    bash baselines/influxdb/influxd.sh start "$INFLUX_DIR" "$INFLUX_HTTP" "$INFLUX_RPC"
    "$BIN/examples/otlp-load" --target influxdb --query-url "http://$INFLUX_HTTP" \
      --clients "$c" --spans "$SPANS" --data-seconds "$DATA_S" || { bash baselines/influxdb/influxd.sh stop "$INFLUX_DIR"; exit 1; }
    bash baselines/influxdb/influxd.sh stop "$INFLUX_DIR"
  done
fi
