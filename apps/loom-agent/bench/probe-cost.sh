#!/usr/bin/env bash
# Added ns per syscall of each syscall-probe mode (the issue-22 benchmark):
# a C loop of syscall(SYS_getppid), N calls, timed untraced and under each
# mode, rounds alternated; bpftrace's count-only probes beside them.
# Usage: probe-cost.sh [CALLS] [ROUNDS]   (root; loom-app and loom-agent built)
# PC_BEFORE_AGENT=/path/to/an/older/loom-agent adds its stored-event modes
# (suffix _before) to the same rounds, for a before/after comparison.
# PC_MODES="untraced target_stored_raw_all ..." runs only those modes
# (names as in the table; untraced should be first, the others are
# measured against it).
# A mode whose agent cannot attach (fentry on a kernel that refuses it)
# prints n/a and the reason.
# Prints a PROBE_COST line per run and a table: per mode the mean ns per
# call and the ns and % added to the same round's untraced loop, in the
# loop thread's CPU time (the probes run in its syscall context; time other
# processes take the CPU away is not counted) and, beside, in wall time.
set -euo pipefail
N=${1:-20000000}
ROUNDS=${2:-2}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$ROOT/target/release
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/loop" "$(dirname "$0")/getppid_loop.c"
PORT=$((20000 + RANDOM % 20000))
"$BIN/loom-app" --addr 127.0.0.1:$PORT --http off --otlp-grpc off --otlp-http off \
  --loom-path "$WORK/store" --report-interval-s 600 >"$WORK/app.log" 2>&1 &
sleep 1
run_loop() { "$WORK/loop" getppidloop "$N"; }
with_agent() { agent_run "$BIN/loom-agent" "$@"; }
with_before() { agent_run "$PC_BEFORE_AGENT" "$@"; }
agent_run() {
  local exe=$1; shift
  "$exe" --to 127.0.0.1:$PORT --report-interval-s 600 "$@" >"$WORK/agent.log" 2>&1 &
  local a=$!
  for _ in $(seq 100); do grep -q attached "$WORK/agent.log" && break; sleep 0.1; done
  if ! grep -q attached "$WORK/agent.log"; then
    echo "  $* -> did not attach: $(grep -v '^libbpf' "$WORK/agent.log" | tail -1)" >&2
    kill -INT $a 2>/dev/null; wait $a || true
    echo "n/a n/a"; return
  fi
  echo "  $* -> $(grep -o 'syscalls: [^)]*' "$WORK/agent.log")" >&2
  run_loop
  kill -INT $a; wait $a || true
  echo "  $* -> $(grep -o 'AGENT events=[0-9]* kernel_drops=[0-9]*' "$WORK/agent.log")" >&2
}
with_bpftrace() {
  bpftrace -e "$1" >"$WORK/bt.log" 2>&1 &
  local b=$!
  for _ in $(seq 300); do grep -q Attaching "$WORK/bt.log" && break; sleep 0.1; done
  grep -q Attaching "$WORK/bt.log" || { echo "bpftrace did not attach:" >&2; cat "$WORK/bt.log" >&2; exit 1; }
  run_loop
  kill -INT $b; wait $b || true
}
declare -A MODES=(
  [untraced]="run_loop"
  [nontarget_per_syscall_pread64]="with_agent --pid 1 --syscalls pread64"
  [nontarget_fentry_pread64]="with_agent --pid 1 --syscalls pread64 --syscall-attach fentry"
  [nontarget_raw_pread64]="with_agent --pid 1 --syscalls pread64 --syscall-attach raw"
  [nontarget_raw_all]="with_agent --pid 1 --syscalls"
  [nontarget_comm_raw_all]="with_agent --comm nosuchprocess --syscalls"
  [target_unlisted_per_syscall]="with_agent --comm getppidloop --syscalls pread64"
  [target_unlisted_raw]="with_agent --comm getppidloop --syscalls pread64 --syscall-attach raw"
  [target_stored_per_syscall]="with_agent --comm getppidloop --syscalls getppid"
  [target_stored_raw_all]="with_agent --comm getppidloop --syscalls"
  [target_stored_per_syscall_before]="with_before --comm getppidloop --syscalls getppid"
  [target_stored_raw_all_before]="with_before --comm getppidloop --syscalls"
  [nontarget_comm_raw_all_before]="with_before --comm nosuchprocess --syscalls"
)
ORDER=(untraced nontarget_per_syscall_pread64 nontarget_fentry_pread64 nontarget_raw_pread64
  nontarget_raw_all nontarget_comm_raw_all target_unlisted_per_syscall target_unlisted_raw
  target_stored_per_syscall target_stored_raw_all bpftrace_raw_pid1 bpftrace_count_loop
  bpftrace_count_getppid_pair)
if [ -n "${PC_BEFORE_AGENT:-}" ]; then
  ORDER+=(target_stored_per_syscall_before target_stored_raw_all_before
    nontarget_comm_raw_all_before)
fi
if [ -n "${PC_MODES:-}" ]; then
  read -ra ORDER <<<"$PC_MODES"
fi
echo "probe-cost: $N calls per run, $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for m in "${ORDER[@]}"; do
    case $m in
      bpftrace_raw_pid1) t=$(with_bpftrace 'tracepoint:raw_syscalls:sys_enter /pid == 1/ { @ = count(); }' | tail -1) ;;
      bpftrace_count_loop) t=$(with_bpftrace 'tracepoint:raw_syscalls:sys_enter /comm == "getppidloop"/ { @ = count(); }' | tail -1) ;;
      # The floor of a stored event on per-syscall tracepoints: a count-only
      # program on the loop's own syscall's entry and exit, no filter.
      bpftrace_count_getppid_pair) t=$(with_bpftrace 'tracepoint:syscalls:sys_enter_getppid { @e = count(); } tracepoint:syscalls:sys_exit_getppid { @x = count(); }' | tail -1) ;;
      *) t=$(${MODES[$m]} | tail -1) ;;
    esac
    read -r cpu wall <<<"$t"
    echo "PROBE_COST round=$r mode=$m calls=$N cpu_ns_per_call=$cpu wall_ns_per_call=$wall"
  done
done | tee "$WORK/runs"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Added cost per round against that round's untraced run, then the mean.
awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
       m = f["mode"]; c = f["cpu_ns_per_call"]; w = f["wall_ns_per_call"]
       if (m == "untraced") { bc = c; bw = w }
       if (c == "n/a") { if (!(m in seen)) { seen[m] = 1; order[++k] = m }; na[m] = 1; next }
       ns[m] += c; add[m] += c - bc; addw[m] += w - bw; n[m]++
       if (!(m in seen)) { seen[m] = 1; order[++k] = m } }
     END { printf "%-32s %11s %11s %8s %12s\n", "mode", "CPU ns/call", "added ns", "added %", "wall added"
           b = ns["untraced"] / n["untraced"]
           for (i = 1; i <= k; i++) { m = order[i]
             if (na[m] && !n[m]) { printf "%-32s %11s\n", m, "n/a (did not attach)"; continue }
             printf "%-32s %11.1f %11.1f %7.1f%% %12.1f\n", m, ns[m] / n[m], add[m] / n[m], 100 * add[m] / n[m] / b, addw[m] / n[m] } }' "$WORK/runs"
