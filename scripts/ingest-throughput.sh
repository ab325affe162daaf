#!/usr/bin/env bash
# End-to-end ingest throughput of loom-app: CONNECTIONS `tcp-replay --no-wait`
# senders loop RECORDING for DURATION seconds into one fresh loom-app; with
# QUERY_EVERY_S > 0 an InfluxQL query is sent to loom-app's HTTP API that often
# (curl, one at a time) while ingest runs: by default the P1 statement over
# [now - 80 s, now - 5 s], which covers the run's data (INGEST_QUERY overrides it).
#
# Usage: scripts/ingest-throughput.sh BIN RECORDING CONNECTIONS DURATION [QUERY_EVERY_S] [PORT]
#   BIN: directory holding loom-app and tcp-replay (e.g. target/release)
#   INGEST_SPEED=X: each sender paces at X times the recorded rate instead of
#   --no-wait (a fixed offered rate, to check that it is taken with zero drops)
#   INGEST_TLS=1: the stream is TLS (loom-app --tls-cert/--tls-key, tcp-replay
#   --tls-ca), with a CA and certificate made here by openssl
#   INGEST_DISK_WBPS=B: writes to the store's disk are capped at B bytes/s
#   for the run (e.g. 493000000, the slower disk of docs/chunk-format.md),
#   by the block layer's throttle at the root of cgroup v1's blkio
#   hierarchy, which the kernel's writeback goes through too; needs root,
#   and is removed on exit
#
# Prints the processes' own summaries, then one result line:
#   RESULT connections=C sent=S received=R dropped=D ingested=I wall_s=W
#          records_per_s=X mb_per_s=Y app_cpu_s=U+S replay_cpu_s=U+S queries=Q
#          query_ms_median=M load=L1,L5,L15 tls=0|1 chunks=N chunks_raw_to_keep_up=K until_durable_s=T
#          disk_wbps=B|none
# until_durable_s: from the senders' start until loom-app exited, every record
# compressed (or stored raw to keep up) and synced.
# records_per_s is what loom-app received and did not drop (received - dropped)
# over the senders' longest wall time; mb_per_s the same in wire bytes.
set -euo pipefail

BIN=${1:?BIN directory}
REC=${2:?recording}
CONNS=${3:-1}
DUR=${4:-20}
QEVERY=${5:-0}
PORT=${6:-17878}
HTTP_PORT=$((PORT + 1))
STATEMENT=${INGEST_QUERY:-"SELECT max(duration_us), percentile(duration_us, 99.99) FROM kv WHERE op = 'read' AND time >= now() - 80s AND time <= now() - 5s"}
# A 20 s run at 20 M records/s writes about 11 GB: retention keeps the store
# (and the disk it shares with other work) bounded; dropping whole old
# segments is part of what a long-running endpoint does anyway.
APP_FLAGS=${INGEST_APP_FLAGS:---retention-bytes 3000000000}

for b in loom-app tcp-replay; do
    [ -x "$BIN/$b" ] || { echo "missing $BIN/$b: make build" >&2; exit 1; }
done
[ -f "$REC" ] || { echo "missing recording $REC: make gen-rocksdb-p2 (synthetic) or record-rocksdb-p2" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time: apt-get install time" >&2; exit 1; }

PACE=--no-wait
if [ -n "${INGEST_SPEED:-}" ]; then PACE="--speed $INGEST_SPEED"; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
store=${TMP_DATA_DIR:-tmp-data}/ingest-throughput
rm -rf "$store"
mkdir -p "$store"
load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,)
THROTTLE_KNOB=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
THROTTLED=""
if [ -n "${INGEST_DISK_WBPS:-}" ]; then
    [ -w "$THROTTLE_KNOB" ] || {
        echo "INGEST_DISK_WBPS needs root and cgroup v1's blkio hierarchy at /sys/fs/cgroup/blkio" \
            "(cgroup v2 has no throttle at its root: set io.max on a cgroup holding loom-app instead)" >&2
        exit 1
    }
    dev=$(df --output=source "$store" | tail -n 1)
    # A partition is throttled through the disk that holds it.
    disk=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -n 1)
    [ -n "$disk" ] && dev=/dev/$disk
    THROTTLED=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
    [ -n "$THROTTLED" ] || { echo "INGEST_DISK_WBPS: no block device found under $store ($dev)" >&2; exit 1; }
    echo "$THROTTLED $INGEST_DISK_WBPS" >"$THROTTLE_KNOB"
    trap 'rm -rf "$out"; echo "$THROTTLED 0" >"$THROTTLE_KNOB"' EXIT
    echo "writes to $dev ($THROTTLED) capped at $INGEST_DISK_WBPS bytes/s for this run"
fi
APP_TLS=""
REPLAY_TLS=""
if [ -n "${INGEST_TLS:-}" ]; then
    command -v openssl >/dev/null || { echo "INGEST_TLS needs openssl: apt-get install openssl" >&2; exit 1; }
    # A CA and a P-256 certificate for localhost it signed (as docs/deploy.md shows).
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
        -subj "/CN=ingest-throughput CA" -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
        -keyout "$out/app.key" -out "$out/app.csr" 2>/dev/null
    openssl x509 -req -in "$out/app.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -days 1 \
        -extfile <(echo "subjectAltName=DNS:localhost") -out "$out/app.crt" 2>/dev/null
    APP_TLS="--tls-cert $out/app.crt --tls-key $out/app.key"
    REPLAY_TLS="--tls-ca $out/ca.crt --tls-server-name localhost"
fi

/usr/bin/time -f "CPU loom-app %U %S" -o "$out/app.time" \
    "$BIN/loom-app" --addr "127.0.0.1:$PORT" --http "127.0.0.1:$HTTP_PORT" --loom-path "$store" \
    --otlp-grpc off --otlp-http off \
    --stop-after-connections "$CONNS" --report-interval-s 5 $APP_TLS $APP_FLAGS \
    >"$out/app.log" 2>&1 &
app=$!
sleep 1

pids=()
t_start=$(date +%s.%N)
for i in $(seq 1 "$CONNS"); do
    /usr/bin/time -f "CPU tcp-replay %U %S" -o "$out/replay$i.time" \
        "$BIN/tcp-replay" --file-path "$REC" --addr "127.0.0.1:$PORT" $PACE --duration-s "$DUR" $REPLAY_TLS \
        >"$out/replay$i.log" 2>&1 &
    pids+=($!)
done

queries=0
: >"$out/query.ms"
if [ "$QEVERY" != 0 ]; then
    sleep 1
    while kill -0 "${pids[0]}" 2>/dev/null; do
        t0=$(date +%s%N)
        curl -sf -G "http://127.0.0.1:$HTTP_PORT/query" --data-urlencode "db=loom" \
            --data-urlencode "q=$STATEMENT" -o "$out/query.json" || echo "query failed" >&2
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000000)) >>"$out/query.ms"
        queries=$((queries + 1))
        left=$(echo "$QEVERY - ($t1 - $t0) / 1000000000" | bc -l)
        if [ "$(echo "$left > 0" | bc -l)" = 1 ]; then sleep "$left"; fi
    done
fi
for p in "${pids[@]}"; do wait "$p" || true; done
wait "$app" || true
# loom-app exits once every record is in the store, compressed and synced.
t_done=$(date +%s.%N)

grep -h "Replay done" "$out"/replay*.log
grep -h -E "^(Final:|store compression)" "$out/app.log"
[ "$QEVERY" != 0 ] && tail -c 300 "$out/query.json" && echo

sent=$(grep -h "Replay done" "$out"/replay*.log | sed -E 's/.*batches, ([0-9]+) records in.*/\1/' | paste -sd+ | bc)
wall=$(grep -h "Replay done" "$out"/replay*.log | sed -E 's/.* records in ([0-9.]+) s.*/\1/' | sort -g | tail -n1)
bytes=$(grep -h "Replay done" "$out"/replay*.log | sed -nE 's/.*, ([0-9]+) bytes sent.*/\1/p' | paste -sd+ | bc)
received=$(sed -nE 's/^Final: records received ([0-9]+), dropped ([0-9]+).*/\1/p' "$out/app.log")
dropped=$(sed -nE 's/^Final: records received ([0-9]+), dropped ([0-9]+).*/\2/p' "$out/app.log")
ingested=$(sed -nE 's/^Final: .*, ingested ([0-9]+),.*/\1/p' "$out/app.log")
app_cpu=$(awk '/^CPU loom-app/ {print $3 "+" $4}' "$out/app.time")
replay_cpu=$(cat "$out"/replay*.time | awk '/^CPU tcp-replay/ {u += $3; s += $4} END {print u "+" s}')
rate=$(echo "($received - $dropped) / $wall" | bc -l)
# Older tcp-replay builds do not report bytes: estimate them from the P2 mix (25/29 B tagged records).
if [ -z "$bytes" ]; then mbps=NA; else mbps=$(printf %.1f "$(echo "$bytes * ($received - $dropped) / $sent / $wall / 1000000" | bc -l)"); fi
# Chunks the flusher stored uncompressed to keep up (format 2's fallback).
raw_keep_up=$(sed -nE 's/^store compression: .* \(([0-9]+) of them to keep up.*/\1/p' "$out/app.log")
chunks=$(sed -nE 's/^store compression: ([0-9]+) chunks written.*/\1/p' "$out/app.log")
qmed=NA
if [ "$queries" -gt 0 ]; then qmed=$(sort -n "$out/query.ms" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'); fi
printf 'RESULT pace=%s connections=%s sent=%s received=%s dropped=%s ingested=%s wall_s=%s records_per_s=%.0f mb_per_s=%s app_cpu_s=%s replay_cpu_s=%s queries=%s query_ms_median=%s load=%s tls=%s chunks=%s chunks_raw_to_keep_up=%s until_durable_s=%.2f disk_wbps=%s\n' \
    "${INGEST_SPEED:-no-wait}" "$CONNS" "$sent" "$received" "$dropped" "$ingested" "$wall" "$rate" "$mbps" "$app_cpu" "$replay_cpu" "$queries" "$qmed" "$load" "${INGEST_TLS:-0}" "${chunks:-NA}" "${raw_keep_up:-NA}" "$(echo "$t_done - $t_start" | bc -l)" "${INGEST_DISK_WBPS:-none}"
rm -rf "$store"
