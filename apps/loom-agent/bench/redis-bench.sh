#!/usr/bin/env bash
# A real service no one here wrote (the issue-22 benchmark): Debian's
# redis-server under redis-benchmark (GET and SET, loopback, fixed options),
# rounds alternating three modes:
#   none      no tracing
#   bpftrace  bpftrace counting redis-server's syscalls by number (raw_syscalls)
#   agent     loom-agent --pid <redis> --syscalls storing every syscall into a
#             loom-app on this host (one loom-app for the whole run; each
#             round's agent has its own `host` tag)
# then one check round with bpftrace and loom-agent attached together, their
# per-syscall counts compared. Prints RB lines per run and a table.
# Usage: redis-bench.sh [ROUNDS] [REQUESTS] [CLIENTS]   (root; built binaries)
# RB_AGENT_ARGS adds flags to every loom-agent (e.g. --ring-buffer-bytes 4194304).
set -euo pipefail
ROUNDS=${1:-3}
REQUESTS=${2:-1000000}
CLIENTS=${3:-50}
PORT=${RB_PORT:-16379}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$ROOT/target/release
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
for b in redis-server redis-benchmark bpftrace; do
  command -v $b >/dev/null || { echo "redis-bench: $b is missing (scripts/install-deps.sh)" >&2; exit 1; }
done

redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
  >"$WORK/redis.log" 2>&1 &
REDIS=$!
APORT=$((20000 + RANDOM % 20000)) HPORT=$((20000 + RANDOM % 20000))
"$BIN/loom-app" --addr 127.0.0.1:$APORT --http 127.0.0.1:$HPORT --otlp-grpc off --otlp-http off \
  --temp-store "$WORK" --report-interval-s 600 --machine-output >"$WORK/app.log" 2>&1 &
APP=$!
for _ in $(seq 100); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
query() { # InfluxQL -> the first value of each row, "tag value" per line
  curl -sG "http://127.0.0.1:$HPORT/query" --data-urlencode "q=$1" | python3 -c '
import json, sys
for res in json.load(sys.stdin)["results"]:
    for s in res.get("series", []):
        print(" ".join(list(s.get("tags", {}).values()) + [str(v[1]) for v in s["values"]]))'
}
settled() { # a count that no longer changes (loom-app holds records for its reorder window)
  local a b=-1
  for _ in $(seq 30); do a=$(query "$1"); [ "$a" = "$b" ] && break; b=$a; sleep 1; done
  echo "${a:-0}"
}
bench() { # requests/s over GET and SET together (total requests / total time)
  redis-benchmark -h 127.0.0.1 -p "$PORT" -t get,set -n "$REQUESTS" -P 1 -c "$CLIENTS" -q \
    | tr '\r' '\n' | grep 'requests per second' | tee -a "$WORK/bench.log" \
    | awk '{ t += 1 / $2; n++ } END { printf "%.0f\n", n / t }'
}
start_bpftrace() {
  bpftrace -e "tracepoint:raw_syscalls:sys_enter /pid == $REDIS/ { @[args->id] = count(); }" >"$WORK/bt.log" 2>&1 &
  BT=$!
  for _ in $(seq 300); do grep -q Attaching "$WORK/bt.log" && return; sleep 0.1; done
  echo "bpftrace did not attach:" >&2; cat "$WORK/bt.log" >&2; exit 1
}
stop_bpftrace() { kill -INT $BT; wait $BT || true; }
start_agent() { # $1: the host tag of this run's series
  # shellcheck disable=SC2086 # RB_AGENT_ARGS is a list of flags
  "$BIN/loom-agent" --to 127.0.0.1:$APORT --pid $REDIS --syscalls --host "$1" \
    --report-interval-s 600 ${RB_AGENT_ARGS:-} >"$WORK/agent.log" 2>&1 &
  AG=$!
  for _ in $(seq 100); do grep -q attached "$WORK/agent.log" && return; sleep 0.1; done
  echo "loom-agent did not attach:" >&2; cat "$WORK/agent.log" >&2; exit 1
}
stop_agent() { # AGENT_STATS: the agent's events and drops (run in this shell: it waits for the agent)
  kill -INT $AG; wait $AG || true
  AGENT_STATS=$(grep -o 'AGENT events=[0-9]* kernel_drops=[0-9]* sent=[0-9]* acked=[0-9]* queue_drops=[0-9]* send_drops=[0-9]*' \
    "$WORK/agent.log" | sed 's/^AGENT //')
}

echo "redis-bench: redis-server $(redis-server --version | grep -o 'v=[0-9.]*') pid $REDIS port $PORT," \
  "redis-benchmark -t get,set -n $REQUESTS -P 1 -c $CLIENTS, $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
bench >/dev/null # warm-up: the keys exist, the allocator has grown
for r in $(seq "$ROUNDS"); do
  for mode in none bpftrace agent; do
    extra=
    case $mode in
      none) rps=$(bench) ;;
      bpftrace) start_bpftrace; rps=$(bench); stop_bpftrace
        extra="bpftrace_syscalls=$(awk -F': ' '/^@\[/ { s += $2 } END { print s + 0 }' "$WORK/bt.log")" ;;
      agent) start_agent "rb-$r"; rps=$(bench); stop_agent
        extra="$AGENT_STATS stored=$(settled "SELECT count(duration_us) FROM syscall WHERE host = 'rb-$r'")" ;;
    esac
    echo "RB round=$r mode=$mode requests_per_s=$rps $extra load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$WORK/runs"
  done
done

echo "check: bpftrace and loom-agent attached together over one redis-benchmark run"
start_bpftrace
start_agent rb-check
bench >/dev/null
stop_agent
stop_bpftrace
echo "  agent: $AGENT_STATS"
awk -F'[][]|: ' '/^@\[/ { print $2, $4 }' "$WORK/bt.log" | sort -n >"$WORK/bt.counts"
query "SELECT count(duration_us) FROM syscall WHERE host = 'rb-check' GROUP BY nr" >/dev/null
settled "SELECT count(duration_us) FROM syscall WHERE host = 'rb-check'" >/dev/null
query "SELECT count(duration_us) FROM syscall WHERE host = 'rb-check' GROUP BY nr" | sort -n >"$WORK/loom.counts"
join -a1 -a2 -e0 -o 0,1.2,2.2 "$WORK/bt.counts" "$WORK/loom.counts" \
  | awk '{ printf "  syscall %-4s bpftrace %9d  loom %9d  diff %+d\n", $1, $2, $3, $3 - $2; b += $2; l += $3 }
         END { printf "  total        bpftrace %9d  loom %9d  diff %+d\n", b, l, l - b }'

kill -INT $APP; wait $APP || true
echo "loom-app: $(grep -o 'STATS.*' "$WORK/app.log")"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
       m = f["mode"]; rps[m] += f["requests_per_s"]; n[m]++
       if (m == "none") base = f["requests_per_s"]; else loss[m] += 1 - f["requests_per_s"] / base
       if (m == "agent") { ev += f["events"]; dr += f["kernel_drops"] + f["queue_drops"] + f["send_drops"]; st += f["stored"] } }
     END { printf "%-10s %12s %18s\n", "mode", "requests/s", "loss vs none"
           split("none bpftrace agent", ms, " ")
           for (i = 1; i <= 3; i++) { k = ms[i]; printf "%-10s %12.0f %17.1f%%\n", k, rps[k] / n[k], 100 * loss[k] / n[k] }
           printf "agent: %d events, %d dropped, %d stored\n", ev, dr, st }' "$WORK/runs"
