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

app_pid=""
stop_app() {
  if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then
    kill -INT "$app_pid"
    wait "$app_pid" || true
  fi
  app_pid=""
}
trap stop_app EXIT

echo "== otlp-bench spans=$SPANS data_s=$DATA_S clients=[$CLIENTS] acks=[$ACKS] loom-app flags=[$APP_FLAGS] $(date -u +%FT%TZ) $(nproc) cores"
for c in $CLIENTS; do
for ack in $ACKS; do
  store="$TMP/loom-$c-$ack"
  log="$TMP/loom-app-$c-$ack.log"
  rm -rf "$store"
  echo "-- loom-app --otlp-ack $ack, $c clients"
  "$BIN/loom-app" --addr 127.0.0.1:0 --http "$QUERY_HTTP" --otlp-grpc "$GRPC" --otlp-http off \
    --loom-path "$store" --query probe-effect --report-interval-s 5 --otlp-ack "$ack" $APP_FLAGS >"$log" 2>&1 &
  app_pid=$!
  for _ in $(seq 1 100); do grep -q "^OTLP gRPC on" "$log" && break; sleep 0.1; done
  grep -q "^OTLP gRPC on" "$log" || { echo "otlp-bench: loom-app did not start:" >&2; tail "$log" >&2; exit 1; }
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
