#!/usr/bin/env bash
# make storage-queries: query latency on compressed vs uncompressed chunks,
# side by side (issue 21's query targets; docs/chunk-format.md).
#
# For each round and each variant (`--compression-level` QUERIES_LEVELS,
# default "1 0": compressed at the engine's default level, and the same frames stored raw), one
# fresh loom-app takes the recording (RECORDING, default the live P2 one)
# looped at QUERIES_SPEED x its pace until ablation data is in (120 + 20 + 5
# s of data), then answers loom-app's ablation questions (no index, time
# index + range index: KV reads > 80 us over a 120 s window, repeated) in
# process. Its store is kept and then asked, with `loom query --store`
# (opening the store included), P1 (max and p99.99 of KV reads) and P2
# (p99.99 of pread64) over the last 60 s of data, and a no-index scan
# (count of KV reads with thread_id > 0: no index answers that, so every
# record of the window is decoded), each with a cold page cache (echo 3 >
# /proc/sys/vm/drop_caches, needs root) and then warm.
#
# Output: `ABLATION variant=L ...` lines (loom-app's own), and
# `QUERY variant=L question=Q cache=cold|warm ms=T records=N` lines.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${CARGO_RELEASE_DIR:-$root/target/release}"
rec="${RECORDING:-$root/recordings/rocksdb-p2}"
out="${TMP_DATA_DIR:-$root/tmp-data}/storage-queries"
levels="${QUERIES_LEVELS:-1 0}"
rounds="${QUERIES_ROUNDS:-2}"
speed="${QUERIES_SPEED:-5}"
[ -f "$rec" ] || { echo "storage-queries: missing $rec (make record-rocksdb-p2)" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# Times one statement on the store: prints `ms records` (the first count).
timed() {
  local store=$1 stmt=$2 t0 t1 ans
  t0=$(date +%s%N)
  ans=$("$bin/loom" query --store "$store" --format csv "$stmt")
  t1=$(date +%s%N)
  if grep -q '^ERR' <<<"$ans"; then
    echo "storage-queries: $ans" >&2
    exit 1
  fi
  echo "$(((t1 - t0) / 1000)) $(tail -n 1 <<<"$ans" | cut -d, -f4)" | awk '{printf "ms=%.1f first_value=%s\n", $1 / 1000, $2}'
}

mkdir -p "$out"
echo "== storage-queries recording=$rec speed=$speed levels=[$levels] rounds=$rounds $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  for level in $levels; do
    store="$out/store-$level"
    rm -rf "$store"
    port=$(free_port)
    log="$out/loom-app-$level.log"
    echo "-- round $round level $level, load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bin/loom-app" --addr "127.0.0.1:$port" --loom-path "$store" --http off --otlp-grpc off --otlp-http off \
      --timestamps event --compression-level "$level" --question ablation-noindex,ablation-timerange \
      --ablation-lookback 20 --query-count 3 >"$log" 2>&1 &
    app=$!
    "$bin/tcp-replay" --file-path "$rec" --addr "127.0.0.1:$port" --speed "$speed" --duration-s 60 \
      >"$out/replay-$level.log" 2>&1 || true
    wait "$app" || true
    grep -iE 'ablation|^store compression' "$log" | sed "s/^/ABLATION variant=$level /"
    # The last 60 s of data.
    end=$("$bin/loom" info --store "$store" | sed -n 's/^  time: .* \.\. \([^ ]*\) .*/\1/p' | sort | tail -n 1)
    t1=$(date -u -d "$end" +%s%N)
    from=$(date -u -d "@$(((t1 / 1000000000) - 60))" +%FT%TZ)
    where="time >= '$from' AND time <= '$end'"
    p1="SELECT count(duration_us), max(duration_us), percentile(duration_us, 99.99) FROM kv WHERE op = 'read' AND $where"
    p2="SELECT count(duration_us), percentile(duration_us, 99.99) FROM syscall WHERE \"name\" = 'pread64' AND $where"
    scan="SELECT count(duration_us) FROM kv WHERE op = 'read' AND thread_id > 0 AND $where"
    for q in p1 p2 scan; do
      for cache in cold warm; do
        [ "$cache" = cold ] && cold
        echo "QUERY variant=$level round=$round question=$q cache=$cache $(timed "$store" "${!q}")"
      done
    done
    echo "STORE variant=$level bytes=$(du -sB1 "$store" | cut -f1) $(grep -o 'ingested [0-9]*' "$log" | head -n 1)"
  done
done
echo "== storage-queries done $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
