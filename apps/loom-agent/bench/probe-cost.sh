#!/usr/bin/env bash
# Added ns per syscall of each syscall-probe mode (the issue-22 benchmark):
# a C loop of syscall(SYS_getppid), N calls, timed untraced and under each
# mode, rounds alternated; bpftrace's count-only probes beside them.
# Usage: probe-cost.sh [CALLS] [ROUNDS]   (root; loom-app and loom-agent built)
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
with_agent() {
  "$BIN/loom-agent" --to 127.0.0.1:$PORT --report-interval-s 600 "$@" >"$WORK/agent.log" 2>&1 &
  local a=$!
  for _ in $(seq 100); do grep -q attached "$WORK/agent.log" && break; sleep 0.1; done
  run_loop
  kill -INT $a; wait $a || true
}
with_bpftrace() {
  bpftrace -e "$1" >"$WORK/bt.log" 2>&1 &
  local b=$!
  for _ in $(seq 300); do grep -q Attaching "$WORK/bt.log" && break; sleep 0.1; done
  run_loop
  kill -INT $b; wait $b || true
}
declare -A MODES=(
  [untraced]="run_loop"
  [nontarget_per_syscall_pread64]="with_agent --pid 1 --syscalls pread64"
  [nontarget_raw_pread64]="with_agent --pid 1 --syscalls pread64 --syscall-attach raw"
  [nontarget_raw_all]="with_agent --pid 1 --syscalls"
  [target_unlisted_per_syscall]="with_agent --comm getppidloop --syscalls pread64"
  [target_unlisted_raw]="with_agent --comm getppidloop --syscalls pread64 --syscall-attach raw"
  [target_stored_per_syscall]="with_agent --comm getppidloop --syscalls getppid"
  [target_stored_raw_all]="with_agent --comm getppidloop --syscalls"
)
ORDER=(untraced nontarget_per_syscall_pread64 nontarget_raw_pread64 nontarget_raw_all
  target_unlisted_per_syscall target_unlisted_raw target_stored_per_syscall target_stored_raw_all
  bpftrace_raw_pid1 bpftrace_count_loop)
for r in $(seq "$ROUNDS"); do
  for m in "${ORDER[@]}"; do
    case $m in
      bpftrace_raw_pid1) ns=$(with_bpftrace 'tracepoint:raw_syscalls:sys_enter /pid == 1/ { @ = count(); }' | tail -1) ;;
      bpftrace_count_loop) ns=$(with_bpftrace 'tracepoint:raw_syscalls:sys_enter /comm == "getppidloop"/ { @ = count(); }' | tail -1) ;;
      *) ns=$(${MODES[$m]} | tail -1) ;;
    esac
    echo "PROBE_COST round=$r mode=$m calls=$N ns_per_call=$ns"
  done
done
