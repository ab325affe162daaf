#!/usr/bin/env bash
# make storage-bench: the same telemetry stored by Loom, by InfluxDB and as
# Parquet + zstd, bytes per record side by side per measurement (see
# docs/chunk-format.md).
#
# Cases (STORAGE_CASES, default: every recording of STORAGE_PHASES found
# under RECORDING_DIR, then `otlp` and `sparse`):
#   - a recording (rocksdb-p1..p3, valkey-p3: live ones from `make
#     record-rocksdb-pN` / `make record-valkey-p3`): tcp-replay sends it at
#     STORAGE_SPEED x its pace to loom-app (records stored at their own
#     time) and, separately, to influx-app writing every point to influxd;
#   - `otlp`: otlp-load's spans (STORAGE_SPANS over 60 s of data, 1 client)
#     over OTLP/gRPC to loom-app and as line protocol to influxd;
#   - `sparse`: many sparse series, chunks sealed by age rather than size:
#     sparse.py's host metrics (STORAGE_SPARSE_HOSTS series, one point each
#     every STORAGE_SPARSE_STEP_MS over STORAGE_SPARSE_S s of data, in time
#     order across series) through /write to loom-app and to influxd.
# Every case starts a fresh influxd on loopback (free ports) whose benchmark
# settings force the cache snapshot and a full TSM compaction seconds after
# writes stop; the script waits for the compaction to settle before
# measuring. Bytes are allocated bytes (du -B1): Loom's whole store (loom
# info, per measurement); InfluxDB's TSM and shard files per measurement
# (influx_bytes.py reads the TSM indexes: Debian ships no influx_inspect),
# its preallocated series files beside them; Parquet + zstd of the same rows
# (loom query --format csv, sorted by series then time, DuckDB from a pinned
# venv under target/).
#
# Figures beside the bytes: ingest wall time of each system, and the time
# of the same query per measurement (count and max of its first numeric field over
# all its data): `loom query --store` (opening the store included, page
# cache warm) and influxd over HTTP.
#
# Output lines:
#   STORAGE case=C measurement=M records=N loom_B=.. loom_Bpr=.. influxdb_B=.. influxdb_Bpr=.. parquet_B=.. parquet_Bpr=..
#   STORAGE-CASE case=C system=loom|influxdb ...   (totals, ingest, query)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/baselines/storage-bench"
bin="${CARGO_RELEASE_DIR:-$root/target/release}"
rec_dir="${RECORDING_DIR:-$root/recordings}"
out="${TMP_DATA_DIR:-$root/tmp-data}/storage-bench"
phases="${STORAGE_PHASES:-rocksdb-p1 rocksdb-p2 rocksdb-p3 valkey-p3}"
speed="${STORAGE_SPEED:-1}"
level="${STORAGE_LEVEL:-1}"  # loom-app's default zstd level
settle_s="${STORAGE_SETTLE_S:-180}"
spans="${STORAGE_SPANS:-600000}"
sparse_hosts="${STORAGE_SPARSE_HOSTS:-500}"
sparse_step_ms="${STORAGE_SPARSE_STEP_MS:-500}"
sparse_s="${STORAGE_SPARSE_S:-600}"
venv="$root/target/storage-bench-venv"

if [ -z "${STORAGE_CASES:-}" ]; then
  cases=""
  for p in $phases; do
    if [ -f "$rec_dir/$p" ]; then
      cases="$cases $p"
    else
      echo "storage-bench: no recording $rec_dir/$p (make record-$p for a live one): skipped" >&2
    fi
  done
  cases="$cases otlp sparse"
else
  cases="$STORAGE_CASES"
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
alloc() { du -B1 -s -c "$@" 2>/dev/null | tail -n 1 | cut -f1; }
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.2f}')"; }
ratio() { python3 -c "print(f'{$1/max($2,1):.2f}')"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# The pinned DuckDB venv (rebuilt when requirements.txt changes).
want="$(cat "$here/requirements.txt")"
if [ "$(cat "$venv/requirements.installed" 2>/dev/null)" != "$want" ] || [ ! -x "$venv/bin/python" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
  printf '%s' "$want" >"$venv/requirements.installed"
fi

app_pid=""
stop_app() {
  if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then
    kill -INT "$app_pid"
    wait "$app_pid" || true
  fi
  app_pid=""
}
trap stop_app EXIT

wait_line() { # FILE PATTERN: waits up to 10 s for a line of a starting app
  for _ in $(seq 1 100); do grep -q "$2" "$1" && return 0; sleep 0.1; done
  echo "storage-bench: no '$2' in $1:" >&2
  tail "$1" >&2
  exit 1
}

# Waits until InfluxDB's WAL is empty and its TSM files stop changing (the
# full compaction ran), at most settle_s.
influx_settle() {
  local idir=$1 last="" stable=0 now wal
  for _ in $(seq 1 "$settle_s"); do
    sleep 1
    now=$(find "$idir/data" "$idir/wal" -type f \( -name '*.tsm' -o -name '*.wal' -o -name '*.tmp' \) -printf '%p %s\n' 2>/dev/null | sort | md5sum)
    wal=$(find "$idir/wal" -name '*.wal' -size +0 2>/dev/null | wc -l)
    if [ "$now" = "$last" ] && [ "$wal" = 0 ]; then
      stable=$((stable + 1))
      [ "$stable" -ge 10 ] && return 0
    else
      stable=0
    fi
    last="$now"
  done
}

influx_start() { # DIR HTTP_PORT RPC_PORT
  INFLUXDB_DATA_CACHE_SNAPSHOT_WRITE_COLD_DURATION=1s \
  INFLUXDB_DATA_COMPACT_FULL_WRITE_COLD_DURATION=5s \
    bash "$root/baselines/influxdb/influxd.sh" start "$1" "127.0.0.1:$2" "127.0.0.1:$3" >/dev/null
}

# Loom's side of a case, once the store is written: per-measurement lines
# of `loom info` into $case_dir/loom.txt (`measurement records bytes`),
# Parquet of every measurement's rows into $case_dir/parquet.txt, query
# times into $case_dir/loom-query.txt.
loom_measure() {
  local store=$1 dir=$2
  "$bin/loom" info --store "$store" | grep -E '^(storage|store) ' | tee "$dir/loom-info.txt"
  sed -n 's/^storage measurement=\([^ ]*\) records=\([0-9]*\) bytes_on_disk=\([0-9]*\).*/\1 \2 \3/p' \
    "$dir/loom-info.txt" >"$dir/loom.txt"
  : >"$dir/parquet.txt"
  : >"$dir/loom-query.txt"
  local m n tags t0 t1 field stmt
  while read -r m n _; do
    # The same statement is timed on influxd: count and max of the
    # measurement's first numeric field over all its data.
    field=$("$bin/loom" query --store "$store" --format csv "SHOW FIELD KEYS FROM \"$m\"" |
      awk -F, 'NR > 1 && ($4 == "integer" || $4 == "float") { print $3; exit }')
    stmt="SELECT count(\"$field\"), max(\"$field\") FROM \"$m\""
    echo "$stmt" >"$dir/stmt-$m"
    t0=$(now)
    "$bin/loom" query --store "$store" --format csv "$stmt" >"$dir/loom-answer-$m.csv"
    t1=$(now)
    if grep -q '^ERR' "$dir/loom-answer-$m.csv"; then
      echo "storage-bench: loom query: $(cat "$dir/loom-answer-$m.csv")" >&2
      exit 1
    fi
    echo "$m $(secs "$t0" "$t1")" >>"$dir/loom-query.txt"
    tags=$("$bin/loom" query --store "$store" --format csv "SHOW TAG KEYS FROM \"$m\"" | tail -n +2 | cut -d, -f3 | tr '\n' ' ')
    "$bin/loom" query --store "$store" --format csv --max-rows $((n + 10)) "SELECT * FROM \"$m\"" >"$dir/$m.csv"
    # shellcheck disable=SC2086
    echo "$m $("$venv/bin/python" "$here/parquet.py" "$dir/$m.csv" "$dir/$m.parquet" $tags)" >>"$dir/parquet.txt"
    rm -f "$dir/$m.csv"
  done <"$dir/loom.txt"
}

# InfluxDB's side, once its data has settled: per measurement `measurement
# points bytes query_s` into $case_dir/influxdb.txt; prints the totals.
influx_measure() {
  local idir=$1 hp=$2 dir=$3
  python3 "$here/influx_bytes.py" "$idir/data" >"$dir/influx-bytes.txt"
  : >"$dir/influxdb.txt"
  local dbs db m t0 t1 points
  dbs=$(curl -sS -G "http://127.0.0.1:$hp/query" --data-urlencode 'q=SHOW DATABASES' |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(v[0] for v in r["results"][0]["series"][0]["values"] if v[0] != "_internal"))')
  for db in $dbs; do
    for m in $(curl -sS -G "http://127.0.0.1:$hp/query" --data-urlencode "db=$db" --data-urlencode 'q=SHOW MEASUREMENTS' |
      python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(v[0] for s in r["results"][0].get("series", []) for v in s["values"]))'); do
      if [ -f "$dir/stmt-$m" ]; then
        t0=$(now)
        curl -sS -G "http://127.0.0.1:$hp/query" --data-urlencode "db=$db" \
          --data-urlencode "q=$(cat "$dir/stmt-$m")" >"$dir/influxdb-answer-$m.json"
        t1=$(now)
      else
        t0=0 t1=0
      fi
      points=$(curl -sS -G "http://127.0.0.1:$hp/query" --data-urlencode "db=$db" \
        --data-urlencode "q=SELECT count(*) FROM \"$m\"" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(max(v for v in s["values"][0][1:] if isinstance(v, int)) for s in r["results"][0].get("series", [])))')
      bytes=$(sed -n "s/^measurement=$m bytes=//p" "$dir/influx-bytes.txt")
      echo "$m $points ${bytes:-0} $(secs "$t0" "$t1")" >>"$dir/influxdb.txt"
    done
  done
}

# The side-by-side lines of a case.
report() {
  local case=$1 dir=$2
  python3 - "$case" "$dir" <<'PY'
import sys
case, d = sys.argv[1], sys.argv[2]
def table(name, cols):
    out = {}
    try:
        for line in open(f"{d}/{name}"):
            f = line.split()
            if f:
                out[f[0]] = f[1:]
    except FileNotFoundError:
        pass
    return out
loom = table("loom.txt", 0)
influx = table("influxdb.txt", 0)
pq = {m: dict(kv.split("=") for kv in v) for m, v in table("parquet.txt", 0).items()}
lq = table("loom-query.txt", 0)
for m in sorted(set(loom) | set(influx)):
    n = int(loom.get(m, [0])[0])
    lb = int(loom.get(m, [0, 0])[1])
    ip, ib = (int(influx[m][0]), int(influx[m][1])) if m in influx else (0, 0)
    pb = int(pq.get(m, {}).get("bytes", 0))
    pr = int(pq.get(m, {}).get("rows", 0))
    bpr = lambda b: f"{b / max(n, 1):.2f}"
    print(f"STORAGE case={case} measurement={m} records={n} loom_B={lb} loom_Bpr={bpr(lb)} "
          f"influxdb_B={ib} influxdb_Bpr={bpr(ib)} influxdb_points={ip} parquet_B={pb} parquet_Bpr={bpr(pb)} "
          f"parquet_rows={pr} loom_query_s={lq.get(m, ['?'])[0]} influxdb_query_s={influx.get(m, ['?'] * 4)[2]}")
PY
}

echo "== storage-bench cases=[$cases] speed=$speed level=$level $(date -u +%FT%TZ) $(nproc) cores, load $(load)"
mkdir -p "$out"
for case in $cases; do
  dir="$out/$case"
  rm -rf "$dir"
  mkdir -p "$dir"
  store="$dir/loom"
  log="$dir/loom-app.log"
  port=$(free_port)
  http=$(free_port)
  grpc=$(free_port)

  # Loom.
  echo "-- $case: loom-app, load $(load)"
  start=$(now)
  case $case in
  otlp)
    "$bin/loom-app" --addr "127.0.0.1:$port" --loom-path "$store" --http "127.0.0.1:$http" \
      --otlp-grpc "127.0.0.1:$grpc" --otlp-http off --compression-level "$level" >"$log" 2>&1 &
    app_pid=$!
    wait_line "$log" "^OTLP gRPC on"
    start=$(now)
    "$bin/examples/otlp-load" --target loom --grpc "127.0.0.1:$grpc" --query-url "http://127.0.0.1:$http" \
      --spans "$spans" --repeat 1 >"$dir/load-loom.log" 2>&1
    ;;
  sparse)
    "$bin/loom-app" --addr "127.0.0.1:$port" --loom-path "$store" --http "127.0.0.1:$http" \
      --otlp-grpc off --otlp-http off --compression-level "$level" >"$log" 2>&1 &
    app_pid=$!
    wait_line "$log" "^InfluxDB API on"
    start=$(now)
    python3 "$here/sparse.py" "http://127.0.0.1:$http" bench "$sparse_hosts" "$sparse_step_ms" "$sparse_s" >"$dir/load-loom.log" 2>&1
    ;;
  *)
    "$bin/loom-app" --addr "127.0.0.1:$port" --loom-path "$store" --stop-after-connections 1 \
      --http off --otlp-grpc off --otlp-http off --timestamps event --compression-level "$level" \
      >"$log" 2>&1 &
    app_pid=$!
    "$bin/tcp-replay" --file-path "$rec_dir/$case" --addr "127.0.0.1:$port" --speed "$speed" >"$dir/replay-loom.log" 2>&1
    wait "$app_pid"
    ;;
  esac
  stop_app
  written=$(now)
  grep -E '^(Final:|store)' "$log" || true
  loom_measure "$store" "$dir"
  # loom-app's OTLP intake log keeps blank and reused files ready (no
  # records; `loom info` reports them apart): beside the store's bytes, as
  # InfluxDB's preallocated series files are.
  echo "STORAGE-CASE case=$case system=loom bytes=$(alloc $(find "$store" -mindepth 1 -maxdepth 1 -not -name otlp-intake)) intake_reserve_bytes=$(alloc "$store/otlp-intake") wall_s=$(secs "$start" "$written") $(grep -o '[0-9]* stored uncompressed ([0-9]* of them to keep up' "$log" | sed 's/ stored uncompressed (/ /; s/ of them to keep up//' | awk '{print "chunks_raw=" $1 " chunks_raw_to_keep_up=" $2}')"

  # InfluxDB.
  idir="$dir/influxdb"
  hp=$(free_port)
  rp=$(free_port)
  echo "-- $case: influxd, load $(load)"
  influx_start "$idir" "$hp" "$rp"
  start=$(now)
  case $case in
  otlp)
    "$bin/examples/otlp-load" --target influxdb --query-url "http://127.0.0.1:$hp" \
      --spans "$spans" --repeat 1 >"$dir/load-influxdb.log" 2>&1
    ;;
  sparse)
    python3 "$here/sparse.py" "http://127.0.0.1:$hp" bench "$sparse_hosts" "$sparse_step_ms" "$sparse_s" >"$dir/load-influxdb.log" 2>&1
    ;;
  *)
    port=$(free_port)
    "$bin/influx-app" --addr "127.0.0.1:$port" --influx-url "http://127.0.0.1:$hp" --complete-data \
      --stop-after-connections 1 --timestamps event >"$dir/influx-app.log" 2>&1 &
    app_pid=$!
    "$bin/tcp-replay" --file-path "$rec_dir/$case" --addr "127.0.0.1:$port" --speed "$speed" >"$dir/replay-influx.log" 2>&1
    wait "$app_pid" || true
    app_pid=""
    ;;
  esac
  written=$(now)
  wall=$(secs "$start" "$written")
  influx_settle "$idir"
  settled=$(now)
  influx_measure "$idir" "$hp" "$dir"
  bash "$root/baselines/influxdb/influxd.sh" stop "$idir" >/dev/null || true
  tsm=$(alloc $(find "$idir/data" -type f -not -path '*/_series/*'))
  series=$(alloc $(find "$idir/data" -type d -name _series))
  echo "STORAGE-CASE case=$case system=influxdb bytes=$tsm series_file_bytes=$series wall_s=$wall compaction_wait_s=$(secs "$written" "$settled")"
  report "$case" "$dir"
done
echo "== storage-bench done $(date -u +%FT%TZ), load $(load)"
