#!/usr/bin/env bash
# Starts or stops the baseline's InfluxDB server (Debian's influxd 1.6.7) with
# baselines/influxdb/influx.conf. Used by `make influxd` / `make influxd-stop`.
#
#   influxd.sh start DIR [HTTP_ADDR] [RPC_ADDR]   fresh database under DIR, waits for /ping
#   influxd.sh stop DIR                            ends the server started on DIR (pid file)
#   influxd.sh cpu DIR                             prints `influxd CPU: user U s, sys S s, total T s`
#                                                  of that server so far (/proc/<pid>/stat)
#
# Each start wipes DIR/{meta,data,wal}: every run begins with an empty
# database, as the published evaluation restarted InfluxDB for every phase.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cmd="${1:-}"
dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR [HTTP_ADDR] [RPC_ADDR]" >&2; exit 2; }
pidfile="$dir/influxd.pid"

case "$cmd" in
start)
  http="${3:-127.0.0.1:8086}"
  rpc="${4:-127.0.0.1:8088}"
  if ! command -v influxd >/dev/null 2>&1; then
    echo "influxd: the influxd binary is missing; install it with: apt-get install influxdb influxdb-client" >&2
    echo "         (or run: make deps, which runs scripts/install-deps.sh)" >&2
    exit 1
  fi
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "influxd: already running (pid $(cat "$pidfile")); make influxd-stop first" >&2
    exit 1
  fi
  rm -rf "$dir/meta" "$dir/data" "$dir/wal"
  mkdir -p "$dir"
  INFLUXDB_META_DIR="$dir/meta" INFLUXDB_DATA_DIR="$dir/data" INFLUXDB_DATA_WAL_DIR="$dir/wal" \
    INFLUXDB_HTTP_BIND_ADDRESS="$http" INFLUXDB_BIND_ADDRESS="$rpc" \
    nohup influxd -config "$here/influx.conf" >"$dir/influxd.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 100); do
    if curl -fsS -o /dev/null "http://$http/ping" 2>/dev/null; then
      echo "influxd: $(influxd version 2>/dev/null) pid $(cat "$pidfile") on http://$http, data in $dir (log $dir/influxd.log)"
      echo "influxd: Debian's 1.6.7; the paper used 1.7.10 (same TSM engine and HTTP write path)"
      exit 0
    fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "influxd: exited during start; its log:" >&2
      tail -n 20 "$dir/influxd.log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    sleep 0.1
  done
  echo "influxd: no answer on http://$http/ping after 10 s; see $dir/influxd.log" >&2
  exit 1
  ;;
stop)
  if [ ! -f "$pidfile" ]; then
    echo "influxd: not running (no $pidfile)"
    exit 0
  fi
  pid="$(cat "$pidfile")"
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    echo "influxd: stopped pid $pid"
  else
    echo "influxd: pid $pid was not running"
  fi
  rm -f "$pidfile"
  ;;
cpu)
  [ -f "$pidfile" ] || { echo "influxd: not running (no $pidfile)" >&2; exit 1; }
  pid="$(cat "$pidfile")"
  # Fields 14 and 15 of /proc/<pid>/stat (utime, stime) in clock ticks; the
  # command name (field 2) may hold spaces, so count from after its ')'.
  stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || { echo "influxd: pid $pid is gone" >&2; exit 1; }
  read -r -a f <<<"${stat##*) }"
  hz="$(getconf CLK_TCK)"
  awk -v u="${f[11]}" -v s="${f[12]}" -v hz="$hz" \
    'BEGIN { printf "influxd CPU: user %.3f s, sys %.3f s, total %.3f s\n", u / hz, s / hz, (u + s) / hz }'
  ;;
*)
  echo "usage: $0 start|stop|cpu DIR [HTTP_ADDR] [RPC_ADDR]" >&2
  exit 2
  ;;
esac
