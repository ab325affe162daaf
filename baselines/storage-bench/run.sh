#!/usr/bin/env bash
# make storage-bench: the same telemetry stored by Loom and by InfluxDB, bytes
# per record side by side (see docs/chunk-format.md).
#
# For each recording (STORAGE_PHASES, files under RECORDING_DIR): tcp-replay
# sends it at STORAGE_SPEED x its pace to loom-app (compression level
# STORAGE_LEVEL, records stored at their own time) and, separately, to
# influx-app writing every point to a fresh Debian influxd on loopback (free
# ports) whose benchmark settings force the cache snapshot and a full TSM
# compaction seconds after writes stop; the script waits for the compaction
# to settle before measuring. Bytes are allocated bytes (du -B1) of every
# file: Loom's whole store; InfluxDB's TSM and index files, with its
# preallocated series files beside them.
#
# Prints per recording `STORAGE system=loom|influxdb recording=R ...` lines
# and Loom's per-measurement `storage measurement=...` lines from `loom info`.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${CARGO_RELEASE_DIR:-$root/target/release}"
rec_dir="${RECORDING_DIR:-$root/recordings}"
out="${TMP_DATA_DIR:-$root/tmp-data}/storage-bench"
phases="${STORAGE_PHASES:-rocksdb-p1 rocksdb-p2 rocksdb-p3}"
speed="${STORAGE_SPEED:-5}"
level="${STORAGE_LEVEL:-3}"
settle_s="${STORAGE_SETTLE_S:-180}"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

alloc() { du -B1 -s -c "$@" 2>/dev/null | tail -n 1 | cut -f1; }

mkdir -p "$out"
for phase in $phases; do
  rec="$rec_dir/$phase"
  if [ ! -f "$rec" ]; then
    echo "storage-bench: missing recording $rec (make gen-$phase, or record-$phase for a live one)" >&2
    exit 1
  fi

  # Loom.
  store="$out/loom-$phase"
  rm -rf "$store"
  port=$(free_port)
  log="$out/loom-app-$phase.log"
  "$bin/loom-app" --addr "127.0.0.1:$port" --loom-path "$store" --stop-after-connections 1 \
    --http off --otlp-grpc off --otlp-http off --timestamps event --compression-level "$level" \
    >"$log" 2>&1 &
  app=$!
  "$bin/tcp-replay" --file-path "$rec" --addr "127.0.0.1:$port" --speed "$speed" >"$out/replay-loom-$phase.log" 2>&1
  wait "$app"
  records=$(grep -o 'ingested [0-9]*' "$log" | head -n 1 | cut -d' ' -f2)
  bytes=$(alloc "$store")
  wall=$(grep -o 'wall [0-9.]* s' "$log" | head -n 1 | cut -d' ' -f2)
  echo "STORAGE system=loom recording=$phase records=$records bytes=$bytes bytes_per_record=$(python3 -c "print(f'{$bytes/max($records,1):.2f}')") ingest_wall_s=$wall level=$level"
  grep '^store compression' "$log" || true
  "$bin/loom" info --store "$store" | grep -E '^(storage|store) '

  # InfluxDB.
  idir="$out/influxdb-$phase"
  hp=$(free_port)
  rp=$(free_port)
  INFLUXDB_DATA_CACHE_SNAPSHOT_WRITE_COLD_DURATION=1s \
  INFLUXDB_DATA_COMPACT_FULL_WRITE_COLD_DURATION=5s \
    bash "$root/baselines/influxdb/influxd.sh" start "$idir" "127.0.0.1:$hp" "127.0.0.1:$rp" >/dev/null
  port=$(free_port)
  ilog="$out/influx-app-$phase.log"
  start=$(date +%s.%N)
  "$bin/influx-app" --addr "127.0.0.1:$port" --influx-url "http://127.0.0.1:$hp" --complete-data \
    --stop-after-connections 1 --timestamps event --query-at-end >"$ilog" 2>&1 &
  app=$!
  "$bin/tcp-replay" --file-path "$rec" --addr "127.0.0.1:$port" --speed "$speed" >"$out/replay-influx-$phase.log" 2>&1
  wait "$app" || true
  written=$(date +%s.%N)
  # Wait until the WAL is empty and the TSM files stop changing (the full
  # compaction ran), at most STORAGE_SETTLE_S.
  last=""
  stable=0
  for _ in $(seq 1 "$settle_s"); do
    sleep 1
    now=$(find "$idir/data" "$idir/wal" -type f \( -name '*.tsm' -o -name '*.wal' -o -name '*.tmp' \) -printf '%p %s\n' 2>/dev/null | sort | md5sum)
    wal=$(find "$idir/wal" -name '*.wal' -size +0 2>/dev/null | wc -l)
    if [ "$now" = "$last" ] && [ "$wal" = 0 ]; then
      stable=$((stable + 1))
      [ "$stable" -ge 10 ] && break
    else
      stable=0
    fi
    last="$now"
  done
  tsm=$(alloc $(find "$idir/data" -type f \( -name '*.tsm' -o -name 'fields.idx' \) ) $(find "$idir/data" -type d -name index))
  series=$(alloc $(find "$idir/data" -type d -name _series))
  settled=$(date +%s.%N)
  # Points InfluxDB holds (same series and time overwrite each other).
  points=$(curl -sS -G "http://127.0.0.1:$hp/query" --data-urlencode db=loom \
    --data-urlencode 'q=SELECT count(*) FROM /.*/' | python3 -c '
import json, sys
r = json.load(sys.stdin)
n = 0
for s in r["results"][0].get("series", []):
    n += max(v for v in s["values"][0][1:] if isinstance(v, int))
print(n)')
  bash "$root/baselines/influxdb/influxd.sh" stop "$idir" >/dev/null || true
  echo "STORAGE system=influxdb recording=$phase records=$records points_stored=$points bytes=$tsm bytes_per_record=$(python3 -c "print(f'{$tsm/max($records,1):.2f}')") series_file_bytes=$series ingest_wall_s=$(python3 -c "print(f'{$written-$start:.1f}')") compaction_wait_s=$(python3 -c "print(f'{$settled-$written:.1f}')")"
done
