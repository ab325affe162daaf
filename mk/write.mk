# /write (line protocol) ingest and Grafana-dashboard latency, loom-app vs
# influxd side by side (scripts/write-bench.sh; docs/write.md). Included by
# the root Makefile.
#
#   make write-bench                          # 1 and 4 writers, 8 hosts, 1 h of data at 10 points/s/host
#   make write-bench WRITE_WRITERS=4 WRITE_DATA_S=600
#
# Output: evaluation-output/write-bench (WRITE-INGEST and PANEL lines).

WRITE_WRITERS ?= 1 4
WRITE_HOSTS ?= 8
WRITE_DATA_S ?= 3600
WRITE_STEP_MS ?= 100
WRITE_REPEAT ?= 5
WRITE_APP_FLAGS ?=

.PHONY: write-bench
write-bench: deps
	$(CARGO) build --release -p loom-app --bins --example write-load 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT)
	set -o pipefail; BIN=$(CARGO_RELEASE_DIR) TMP_DATA_DIR=$(TMP_DATA_DIR) WRITE_WRITERS="$(WRITE_WRITERS)" \
		WRITE_HOSTS=$(WRITE_HOSTS) WRITE_DATA_S=$(WRITE_DATA_S) WRITE_STEP_MS=$(WRITE_STEP_MS) \
		WRITE_REPEAT=$(WRITE_REPEAT) WRITE_APP_FLAGS="$(WRITE_APP_FLAGS)" \
		bash scripts/write-bench.sh 2>&1 | tee $(EVAL_OUT)/write-bench

# The dashboard of 8 Grafana-shaped panels over a live P3 recording
# (scripts/p3-dashboard-bench.sh; docs/write.md): side by side with influxd on
# BOTH_LOOPS loops of the recording, then loom-app alone over an hour of loops.
#   make record-rocksdb-p3 RECORD_DURATION=20    # once: recordings/rocksdb-p3
#   make p3-dashboard-bench                      # -> evaluation-output/p3-dashboard-bench
P3_BOTH_LOOPS ?= 3
P3_HOUR_LOOPS ?= 0
P3_REPEAT ?= 5
P3_HOUR_SPEED ?= 6

.PHONY: p3-dashboard-bench
p3-dashboard-bench: deps
	$(CARGO) build --release --workspace --bins 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT)
	set -o pipefail; BIN=$(CARGO_RELEASE_DIR) TMP_DATA_DIR=$(TMP_DATA_DIR) RECORDING=$(RECORDING_DIR)/rocksdb-p3 \
		BOTH_LOOPS=$(P3_BOTH_LOOPS) HOUR_LOOPS=$(P3_HOUR_LOOPS) HOUR_SPEED=$(P3_HOUR_SPEED) REPEAT=$(P3_REPEAT) \
		bash scripts/p3-dashboard-bench.sh 2>&1 | tee $(EVAL_OUT)/p3-dashboard-bench
