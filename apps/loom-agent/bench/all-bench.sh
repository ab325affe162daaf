#!/usr/bin/env bash
# loom-agent --all beside the demo (the issue-22 benchmark): the project's
# demo (scripts/demo.sh: a live RocksDB workload with its own syscall probe,
# then its recording replayed into the demo's loom-app) runs about SECONDS s
# while loom-agent --all streams every process's events to a second loom-app
# on this host. loom-app's VmRSS is sampled once a second; GNU time gives the
# agent's CPU (user + sys) and peak RSS. The agent's RSS holds its ring
# buffers (each mapped twice, so a 16 MiB ring shows as 32 MB), so its own
# memory (RssAnon, sampled) is printed beside. The agent's CPU is also read
# from /proc/PID/stat once it has attached and again just before it is
# stopped, so start-up (loading and attaching the probes, paid once per
# agent life), steady state and the drain at exit are shown apart: over a
# 60 s run start-up is a visible share, over days it is none. Prints ALL
# lines and a result table: max RSS, CPU-s per million events, every drop
# the agent and loom-app count.
# Usage: all-bench.sh [SECONDS] [AGENT PROBE FLAGS...]   (root; built binaries)
set -euo pipefail
SECONDS_RUN=${1:-60}
shift || true
PROBES=("$@")
[ ${#PROBES[@]} -gt 0 ] || PROBES=(--syscalls --blockio --runqueue)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$ROOT/target/release
WORK=$(mktemp -d)
AG=
cleanup() { # the agent runs under GNU time, so it is not one of our jobs
  if [ -n "$AG" ]; then kill -INT "$AG" 2>/dev/null || true; fi
  kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"
}
trap cleanup EXIT

APORT=$((20000 + RANDOM % 20000))
"$BIN/loom-app" --addr 127.0.0.1:$APORT --http off --otlp-grpc off --otlp-http off \
  --temp-store "$WORK" --report-interval-s 10 --machine-output >"$WORK/app.log" 2>&1 &
APP=$!
sleep 1
# GNU time reports the agent's CPU and peak RSS over its whole life, its
# drain at exit included.
/usr/bin/time -o "$WORK/agent.time" -f '%U %S %M' \
  "$BIN/loom-agent" --to 127.0.0.1:$APORT --all "${PROBES[@]}" --report-interval-s 10 >"$WORK/agent.log" 2>&1 &
TIMED=$!
for _ in $(seq 100); do grep -q attached "$WORK/agent.log" && break; sleep 0.1; done
grep -q attached "$WORK/agent.log" || { echo "loom-agent did not attach:" >&2; cat "$WORK/agent.log" >&2; exit 1; }
AG=$(pgrep -P $TIMED)
ticks() { # the agent's user + system CPU so far, in clock ticks
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$AG/stat"
}
HZ=$(getconf CLK_TCK)
AG_T0=$(ticks)
APP_MAX=0 AG_ANON_MAX=0
sample() { # the largest loom-app VmRSS and agent RssAnon seen, kB
  local a g
  a=$(awk '/^VmRSS/ { print $2 }' "/proc/$APP/status")
  g=$(awk '/^RssAnon/ { print $2 }' "/proc/$AG/status" 2>/dev/null || echo 0)
  if [ "$a" -gt "$APP_MAX" ]; then APP_MAX=$a; fi
  if [ "${g:-0}" -gt "$AG_ANON_MAX" ]; then AG_ANON_MAX=$g; fi
}

record_s=$((SECONDS_RUN / 3 < 20 ? SECONDS_RUN / 3 : 20))
replay_s=$((SECONDS_RUN - record_s - 10 > 10 ? SECONDS_RUN - record_s - 10 : 10))
echo "all-bench: loom-agent --all ${PROBES[*]} beside the demo (recording ${record_s} s, replay ${replay_s} s), load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s.%N)
BIN=$BIN TMP_DATA_DIR=$WORK DEMO_ADDR=127.0.0.1:$((APORT + 1)) DEMO_RECORD_S=$record_s DEMO_REPLAY_S=$replay_s \
  bash "$ROOT/scripts/demo.sh" >"$WORK/demo.log" 2>&1 &
DEMO=$!
i=0
while kill -0 $DEMO 2>/dev/null; do
  sleep 1; sample; i=$((i + 1))
  if [ $((i % 10)) -eq 0 ]; then
    echo "  [${i} s] demo: $(grep -E '^(==|demo done)' "$WORK/demo.log" | tail -n 1)"
    echo "  [${i} s] RSS MB: loom-app $(awk '/^VmRSS/ { print int($2 / 1024) }' /proc/$APP/status)," \
      "agent $(awk '/^(VmRSS|RssAnon|RssFile|RssShmem)/ { printf "%s %d ", $1, $2 / 1024 }' /proc/$AG/status)"
    echo "  [${i} s] agent: $(grep -v '^AGENT' "$WORK/agent.log" | tail -n 1 | cut -c1-160)"
  fi
done
wait $DEMO || { echo "the demo failed:" >&2; tail -n 20 "$WORK/demo.log" >&2; exit 1; }
AG_T1=$(ticks)
kill -INT $AG; wait $TIMED || true
elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
read -r ag_user ag_sys ag_kb <"$WORK/agent.time"
ag_cpu=$(awk -v u="$ag_user" -v s="$ag_sys" 'BEGIN { print u + s }')
sample
sleep 2 # loom-app stores what the agent sent last
kill -INT $APP; wait $APP || true
agent=$(grep -o 'AGENT .*' "$WORK/agent.log")
stats=$(grep -o 'STATS .*' "$WORK/app.log")
field() { echo "$1" | grep -o "\b$2=[0-9]*" | head -n 1 | cut -d= -f2; }
events=$(field "$agent" events)
echo "ALL seconds=$elapsed $agent"
echo "ALL loom-app $stats"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v ev="$events" -v cpu="$ag_cpu" -v s="$elapsed" -v app="$APP_MAX" -v ag="$ag_kb" -v anon="$AG_ANON_MAX" \
  -v kd="$(field "$agent" kernel_drops)" \
  -v qd="$(field "$agent" queue_drops)" -v sd="$(field "$agent" send_drops)" \
  -v rd="$(field "$stats" dropped)" -v late="$(field "$stats" late)" -v sr="$(field "$stats" series_refused)" \
  -v ls="$(field "$stats" late_stored)" \
  -v ns="$(field "$stats" not_stored)" -v ing="$(field "$stats" ingested)" \
  -v t0="$AG_T0" -v t1="$AG_T1" -v hz="$HZ" 'BEGIN {
  start = t0 / hz; steady = (t1 - t0) / hz; drain = cpu - t1 / hz
  printf "%-40s %14s %10s\n", "measure", "value", "target"
  printf "%-40s %14.0f %10s\n", "agent events", ev, ""
  printf "%-40s %14.0f %10s\n", "events/s", ev / s, ""
  printf "%-40s %14.0f %10s\n", "loom-app records ingested", ing, ""
  printf "%-40s %14s %10s\n", "drops: kernel / queue / send", kd "/" qd "/" sd, "0"
  printf "%-40s %14s %10s\n", "loom-app dropped/late/refused/not stored", rd "/" late "/" sr "/" ns, "0"
  printf "%-40s %14s %10s\n", "loom-app late stored at their own time", ls, ""
  printf "%-40s %14.0f %10s\n", "loom-app max RSS (MB)", app / 1024, "<= 512"
  printf "%-40s %14.0f %10s\n", "agent max RSS (MB)", ag / 1024, "<= 64"
  printf "%-40s %14.0f %10s\n", "  of which its own memory (RssAnon)", anon / 1024, ""
  printf "%-40s %14.2f %10s\n", "agent CPU-s", cpu, ""
  printf "%-40s %14s %10s\n", "  start-up / steady / drain at exit", sprintf("%.2f/%.2f/%.2f", start, steady, drain), ""
  printf "%-40s %14.3f %10s\n", "agent CPU-s per million events", (ev > 0 ? cpu / (ev / 1e6) : 0), "<= 0.2"
  printf "%-40s %14.3f %10s\n", "  steady state only", (ev > 0 ? steady / (ev / 1e6) : 0), "" }'
