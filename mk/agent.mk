# loom-agent's benchmarks (issue 22's targets; docs/deploy.md, "What the
# agent costs"). As root; each builds nothing itself beyond `make build`'s
# command, prints progress and a result table, and appends its log to
# $(EVAL_OUT)/agent-*. Not part of `make test`.
#
#   make agent-probe-cost [PC_CALLS=20000000] [PC_ROUNDS=2]
#       ns added per syscall of a getppid loop by each syscall-probe mode
#       (non-target, target's unlisted syscall, stored event), bpftrace beside;
#       PC_BEFORE_AGENT=/path/to/older/loom-agent adds its stored-event modes
#   make agent-redis-bench [RB_ROUNDS=3] [RB_REQUESTS=1000000] [RB_CLIENTS=50]
#       redis-benchmark against Debian's redis-server: untraced / bpftrace
#       counting its syscalls / loom-agent --pid storing them, alternated;
#       RB_AGENT_ARGS="--ring-buffer-bytes 4194304" adds flags to the agent
#   make agent-all-bench [ALL_S=60] [ALL_PROBES="--syscalls --blockio --runqueue"]
#       loom-agent --all beside `make demo` (scripts/demo.sh): RSS, CPU-s per
#       million events, drops

CARGO_RELEASE_DIR ?= target/release
EVAL_OUT ?= evaluation-output
TMP_DATA_DIR ?= tmp-data
PC_CALLS ?= 20000000
PC_ROUNDS ?= 2
RB_ROUNDS ?= 3
RB_REQUESTS ?= 1000000
RB_CLIENTS ?= 50
ALL_S ?= 60
ALL_PROBES ?= --syscalls --blockio --runqueue

.PHONY: agent-bench-build agent-probe-cost agent-redis-bench agent-all-bench

agent-bench-build:
	@$(CARGO_BUILD_ALL) 2>&1 | tail -n 1

agent-probe-cost: agent-bench-build
	mkdir -p $(EVAL_OUT)
	@set -o pipefail; { echo "== agent-probe-cost $$(date -u +%FT%TZ)"; \
	  PC_BEFORE_AGENT=$(PC_BEFORE_AGENT) bash apps/loom-agent/bench/probe-cost.sh $(PC_CALLS) $(PC_ROUNDS); } 2>&1 | tee -a $(EVAL_OUT)/agent-probe-cost

agent-redis-bench: agent-bench-build
	mkdir -p $(EVAL_OUT)
	@set -o pipefail; { echo "== agent-redis-bench $$(date -u +%FT%TZ)"; \
	  RB_AGENT_ARGS="$(RB_AGENT_ARGS)" bash apps/loom-agent/bench/redis-bench.sh $(RB_ROUNDS) $(RB_REQUESTS) $(RB_CLIENTS); } 2>&1 | tee -a $(EVAL_OUT)/agent-redis-bench

agent-all-bench: agent-bench-build
	mkdir -p $(EVAL_OUT)
	@set -o pipefail; { echo "== agent-all-bench $$(date -u +%FT%TZ)"; \
	  bash apps/loom-agent/bench/all-bench.sh $(ALL_S) $(ALL_PROBES); } 2>&1 | tee -a $(EVAL_OUT)/agent-all-bench
