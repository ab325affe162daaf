#!/usr/bin/env bash
# Acknowledged vs unacknowledged TCP stream into loom-app, on the same
# recording, side by side (make acked-throughput; mk/acks.mk).
#
# Usage: scripts/acked-throughput.sh BIN RECORDING RUNS KILLS [PORT]
#   BIN: directory holding loom-app and tcp-replay (e.g. target/release)
#   Each run sends RECORDING once with `tcp-replay --no-wait` into a fresh
#   loom-app, first without acknowledgements (wire version 1, as the
#   paper's experiments), then with `--acked` (wire version 2: every frame
#   kept until loom-app says it is durable); RUNS rounds, alternated.
#   Then one acked run during which loom-app is SIGKILLed KILLS times at
#   random points (seed printed; ACK_KILL_SEED to repeat) and restarted on
#   its store; at the end the store's record count is compared with what
#   the sender sent (zero loss; exactly-once at own times is what
#   apps/loom-app/tests/acked_restart.rs checks record by record).
#
# Prints one line per run:
#   RESULT mode=unacked|acked run=N records=R wall_s=W records_per_s=X
#          [ack_p50_ms=.. ack_p99_ms=..] stored=S load=L1,L5,L15
#   KILLS kills=K seed=S sent=R acked=A stored=S lost=L resent_frames=F load=..
set -euo pipefail

BIN=${1:?BIN directory}
REC=${2:?recording}
RUNS=${3:-3}
KILLS=${4:-10}
PORT=${5:-17978}
HTTP_PORT=$((PORT + 1))
ROOT=${TMP_DATA_DIR:-tmp-data}/acked-throughput

for b in loom-app tcp-replay; do
    [ -x "$BIN/$b" ] || { echo "missing $BIN/$b: cargo build --release -p loom-app -p replay" >&2; exit 1; }
done
[ -f "$REC" ] || { echo "missing recording $REC" >&2; exit 1; }
command -v curl >/dev/null || { echo "missing curl: apt-get install curl" >&2; exit 1; }

out=$(mktemp -d)
app=""
cleanup() { [ -n "$app" ] && kill -9 "$app" 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT

start_app() { # STORE LOG [FLAGS...]
    local store=$1 log=$2
    shift 2
    "$BIN/loom-app" --addr "127.0.0.1:$PORT" --http "127.0.0.1:$HTTP_PORT" --loom-path "$store" \
        --otlp-grpc off --otlp-http off --machine-output --report-interval-s 60 "$@" \
        >>"$log" 2>>"$log.err" &
    app=$!
    for _ in $(seq 1 200); do
        grep -q "listening on" "$log" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "loom-app did not start: $(tail -3 "$log.err")" >&2
    exit 1
}

stop_app() {
    kill -INT "$app"
    wait "$app" || true
    app=""
}

# Records in the store of the running loom-app (kv + syscall, the P2 kinds).
stored() {
    local n=0 m c
    for m in kv syscall; do
        c=$(curl -s "http://127.0.0.1:$HTTP_PORT/query" --data-urlencode "q=SELECT count(duration_us) FROM $m" |
            grep -o '"values":\[\[[^]]*\]' | sed 's/.*,//' | tr -d ']' | cut -d. -f1)
        n=$((n + ${c:-0}))
    done
    echo "$n"
}

load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,; }

for run in $(seq 1 "$RUNS"); do
    for mode in unacked acked; do
        store=$ROOT/$mode
        rm -rf "$store"
        mkdir -p "$store"
        l=$(load)
        : >"$out/app.log"
        # The wall time runs from the sender's start until everything sent
        # is durable: for the acked sender when its last frame is
        # acknowledged; for the unacked one when loom-app, which ends after
        # the connection and persists at exit, has stopped.
        if [ "$mode" = acked ]; then
            start_app "$store" "$out/app.log"
            t0=$(date +%s.%N)
            "$BIN/tcp-replay" --file-path "$REC" --addr "127.0.0.1:$PORT" --no-wait --acked \
                >"$out/replay.log" 2>"$out/replay.err" || { cat "$out/replay.err" >&2; exit 1; }
            t1=$(date +%s.%N)
            n=$(stored)
            stop_app
            line=$(grep "^Acked replay done" "$out/replay.log")
            p50=$(echo "$line" | sed -E 's/.*p50 ([0-9.]+) ms.*/\1/')
            p99=$(echo "$line" | sed -E 's/.*p99 ([0-9.]+) ms.*/\1/')
            extra=" ack_p50_ms=$p50 ack_p99_ms=$p99"
        else
            start_app "$store" "$out/app.log" --stop-after-connections 1
            t0=$(date +%s.%N)
            "$BIN/tcp-replay" --file-path "$REC" --addr "127.0.0.1:$PORT" --no-wait \
                >"$out/replay.log" 2>"$out/replay.err" || { cat "$out/replay.err" >&2; exit 1; }
            wait "$app" || true
            t1=$(date +%s.%N)
            app=""
            n=$(grep -o "ingested=[0-9]*" "$out/app.log" | cut -d= -f2)
            line=$(grep "^Replay done" "$out/replay.log")
            extra=" dropped=$(grep -o " dropped=[0-9]*" "$out/app.log" | cut -d= -f2)"
        fi
        recs=$(echo "$line" | sed -E 's/.*: [0-9]+ (frames|batches), ([0-9]+) records.*/\2/')
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b - a}')
        echo "RESULT mode=$mode run=$run records=$recs wall_s=$w records_per_s=$(awk -v r="$recs" -v w="$w" 'BEGIN{printf "%.0f", r/w}')$extra stored=$n load=$l"
        rm -rf "$store"
    done
done

# Zero loss across KILLS SIGKILLs.
seed=${ACK_KILL_SEED:-$RANDOM}
RANDOM=$seed
store=$ROOT/kills
rm -rf "$store"
mkdir -p "$store"
l=$(load)
: >"$out/app.log"
start_app "$store" "$out/app.log"
"$BIN/tcp-replay" --file-path "$REC" --addr "127.0.0.1:$PORT" --no-wait --acked \
    >"$out/replay.log" 2>"$out/replay.err" &
replay=$!
for k in $(seq 1 "$KILLS"); do
    sleep "$(awk -v r=$RANDOM 'BEGIN{printf "%.2f", 0.3 + (r % 1500) / 1000}')"
    kill -9 "$app"
    wait "$app" 2>/dev/null || true
    start_app "$store" "$out/app.log"
done
wait "$replay" || { echo "the acked replay failed:"; tail -5 "$out/replay.log" "$out/replay.err"; exit 1; }
sleep 1.5
n=$(stored)
stop_app
line=$(grep "^Acked replay done" "$out/replay.log")
sent=$(echo "$line" | sed -E 's/.*: [0-9]+ frames, ([0-9]+) records in.*/\1/')
acked=$(echo "$line" | sed -E 's/.*acknowledged ([0-9]+) records.*/\1/')
resent=$(echo "$line" | sed -E 's/.* ([0-9]+) frames resent.*/\1/')
echo "$line"
echo "KILLS kills=$KILLS seed=$seed sent=$sent acked=$acked stored=$n lost=$((sent - n)) resent_frames=$resent load=$l"
rm -rf "$store"
[ "$n" -eq "$sent" ]
