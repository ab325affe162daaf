# End-to-end and ablation experiments: recordings replayed into loom-app.
# Included by the root Makefile (include mk/*.mk; its SHELL is bash). Every variable below can be
# overridden on the command line, e.g. `make rocksdb-p1 REPLAY_DURATION=60`.
#
# Typical run (two terminals):
#   make e2e-mach-app QUERY=rocksdb-p1      # endpoint, tees evaluation-output/e2e-mach-app-rocksdb-p1
#   make rocksdb-p1 REPLAY_DURATION=600     # sender
# Ablation:
#   make ab-mach-app QUERY=ablation-timerange LOOKBACK=60   # then: make rocksdb-p1 REPLAY_DURATION=200
#   (the replay must last at least 125 + LOOKBACK s of data: ingest stops there and the count runs)

CARGO ?= cargo
CARGO_RELEASE_DIR ?= target/release
RECORDING_DIR ?= recordings
EVAL_OUT ?= evaluation-output
TMP_DATA_DIR ?= tmp-data
LOOM_APP_ADDR ?= 127.0.0.1:7878
# Seconds to keep replaying (the recording loops with timestamps shifted);
# the default covers loom-app's 5 query rounds, 120 s apart.
REPLAY_DURATION ?= 620
# Pace multiplier of tcp-replay (1 = recorded pace).
REPLAY_SPEED ?= 1
REPLAY_FLAGS ?=
QUERY ?= rocksdb-p1
LOOKBACK ?= 20
# Extra loom-app flags; by default it exits (with its final summary) once the
# replay connection ends. The endpoint targets always add --temp-store
# $(TMP_DATA_DIR): a fresh store per run, deleted when loom-app exits.
LOOM_APP_FLAGS ?= --stop-after-connections 1
# Synthetic recordings (make gen-rocksdb-p1 ...).
GEN_DURATION ?= 120
GEN_RATE ?= 100000
GEN_SEED ?= 1

# CPU pinning scaled to the machine: replay on the last core, the endpoint on
# the others (all cores on a 1-core machine).
E2E_NPROC := $(shell nproc 2>/dev/null || echo 1)
E2E_REPLAY_CORE := $(shell n=$(E2E_NPROC); echo $$((n - 1)))
E2E_APP_CORES := $(shell n=$(E2E_NPROC); if [ $$n -gt 1 ]; then echo 0-$$((n - 2)); else echo 0; fi)
E2E_TASKSET ?= $(shell command -v taskset >/dev/null 2>&1 && echo taskset -c)
E2E_PIN_REPLAY := $(if $(E2E_TASKSET),$(E2E_TASKSET) $(E2E_REPLAY_CORE))
E2E_PIN_APP := $(if $(E2E_TASKSET),$(E2E_TASKSET) $(E2E_APP_CORES))

E2E_PHASES := rocksdb-p1 rocksdb-p2 rocksdb-p3

.PHONY: e2e-build ab-build $(E2E_PHASES) $(addprefix gen-,$(E2E_PHASES)) \
	e2e-mach-app e2e-loom-app ab-mach-app ab-loom-app demo-pipeline

e2e-build:
	$(CARGO_BUILD_ALL)

ab-build: e2e-build

# Synthetic recording of a phase (says SYNTHETIC in its header and output).
$(addprefix gen-,$(E2E_PHASES)): gen-rocksdb-%: e2e-build
	mkdir -p $(RECORDING_DIR)
	$(CARGO_RELEASE_DIR)/replay gen --workload rocksdb --phase $* \
		--duration-s $(GEN_DURATION) --rate $(GEN_RATE) --seed $(GEN_SEED) \
		--output $(RECORDING_DIR)/rocksdb-$*
	$(CARGO_RELEASE_DIR)/data-stats $(RECORDING_DIR)/rocksdb-$*

# Replay a recording into the endpoint at $(LOOM_APP_ADDR) for $(REPLAY_DURATION) s.
$(E2E_PHASES): rocksdb-%: e2e-build
	@if [ ! -f "$(RECORDING_DIR)/rocksdb-$*" ]; then \
		echo "missing recording $(RECORDING_DIR)/rocksdb-$*; make one with:"; \
		echo "  make gen-rocksdb-$*      (synthetic)"; \
		echo "  make record-rocksdb-$*   (live RocksDB workload with probes)"; \
		exit 1; \
	fi
	$(E2E_PIN_REPLAY) $(CARGO_RELEASE_DIR)/tcp-replay --file-path $(RECORDING_DIR)/rocksdb-$* \
		--addr $(LOOM_APP_ADDR) --duration-s $(REPLAY_DURATION) --speed $(REPLAY_SPEED) $(REPLAY_FLAGS)

e2e-mach-app e2e-loom-app: e2e-build
	mkdir -p $(EVAL_OUT)
	set -o pipefail; $(E2E_PIN_APP) $(CARGO_RELEASE_DIR)/loom-app --addr $(LOOM_APP_ADDR) --query $(QUERY) \
		--temp-store $(TMP_DATA_DIR) $(LOOM_APP_FLAGS) 2>&1 | tee $(EVAL_OUT)/e2e-mach-app-$(QUERY)

# AB_LOG names the log (default: the query); QUERY may list several ablation
# modes (comma separated) to answer all of them from one ingest, e.g.
#   make ab-mach-app QUERY=ablation-noindex,ablation-timerange AB_LOG=ablation-all LOOKBACK=60
AB_LOG ?= $(QUERY)
ab-mach-app ab-loom-app: ab-build
	mkdir -p $(EVAL_OUT)
	set -o pipefail; $(E2E_PIN_APP) $(CARGO_RELEASE_DIR)/loom-app --addr $(LOOM_APP_ADDR) --query $(QUERY) \
		--ablation-lookback $(LOOKBACK) --temp-store $(TMP_DATA_DIR) $(LOOM_APP_FLAGS) 2>&1 \
		| tee $(EVAL_OUT)/ab-mach-$(AB_LOG)-$(LOOKBACK)

# `make demo` with a synthetic recording (no eBPF, no RocksDB run): loom-app
# answers the P1/P2 questions twice while the recording is replayed.
demo-pipeline: e2e-build
	DEMO_SYNTHETIC=1 BIN=$(CARGO_RELEASE_DIR) TMP_DATA_DIR=$(TMP_DATA_DIR) bash scripts/demo.sh

# Highest --speed with zero drops: one fresh loom-app per speed.
#   make e2e-speed-sweep PHASE=p2 SPEEDS="1 2 4 6 8" SWEEP_SECONDS=15
PHASE ?= p1
SPEEDS ?= 1 2 4 6 8
SWEEP_SECONDS ?= 15
.PHONY: e2e-speed-sweep
e2e-speed-sweep: e2e-build
	@test -f $(RECORDING_DIR)/rocksdb-$(IT_PHASE) || { echo "missing $(RECORDING_DIR)/rocksdb-$(IT_PHASE): make gen-rocksdb-$(IT_PHASE) or record-rocksdb-$(IT_PHASE)"; exit 1; }
	mkdir -p $(EVAL_OUT)
	@echo "== e2e-speed-sweep rocksdb-$(PHASE) $$(date -u +%FT%TZ)" | tee -a $(EVAL_OUT)/e2e-speed-$(PHASE)
	BIN=$(CARGO_RELEASE_DIR) TMP_DATA_DIR=$(TMP_DATA_DIR) bash crates/replay/scripts/speed-sweep.sh \
		$(RECORDING_DIR)/rocksdb-$(IT_PHASE) "$(SPEEDS)" $(SWEEP_SECONDS) rocksdb-$(PHASE) \
		| tee -a $(EVAL_OUT)/e2e-speed-$(PHASE)

# End-to-end ingest throughput of loom-app: CONNECTIONS `tcp-replay --no-wait`
# senders loop the recording for THROUGHPUT_SECONDS into one fresh loom-app
# (store under tmp-data/, deleted after); QUERY_EVERY_S > 0 also asks the P1
# statement over HTTP that often. Prints the processes' summaries and one
# `RESULT ...` line (records/s, MB/s, CPU s of each process, load average).
#   make ingest-throughput CONNECTIONS=1 QUERY_EVERY_S=0 [IT_PHASE=p2] [THROUGHPUT_SECONDS=20] [RUNS=3] [IT_SPEED=100]
# IT_SPEED paces each sender at that multiple of the recorded rate (a fixed
# offered rate) instead of --no-wait (as fast as it goes).
CONNECTIONS ?= 1
QUERY_EVERY_S ?= 0
THROUGHPUT_SECONDS ?= 20
# The recording: recordings/rocksdb-$(IT_PHASE) (P2 mix by default).
IT_PHASE ?= p2
IT_SPEED ?=
.PHONY: ingest-throughput
ingest-throughput: e2e-build
	@test -f $(RECORDING_DIR)/rocksdb-$(IT_PHASE) || { echo "missing $(RECORDING_DIR)/rocksdb-$(IT_PHASE): make gen-rocksdb-$(IT_PHASE) or record-rocksdb-$(IT_PHASE)"; exit 1; }
	mkdir -p $(EVAL_OUT)
	@set -o pipefail; for i in $$(seq 1 $(or $(RUNS),1)); do \
	  echo "== ingest-throughput rocksdb-$(IT_PHASE) connections=$(CONNECTIONS) query_every_s=$(QUERY_EVERY_S) run $$i $$(date -u +%FT%TZ)"; \
	  TMP_DATA_DIR=$(TMP_DATA_DIR) INGEST_SPEED=$(IT_SPEED) bash scripts/ingest-throughput.sh $(CARGO_RELEASE_DIR) $(RECORDING_DIR)/rocksdb-$(IT_PHASE) \
	    $(CONNECTIONS) $(THROUGHPUT_SECONDS) $(QUERY_EVERY_S) || exit 1; \
	done 2>&1 | tee -a $(EVAL_OUT)/ingest-throughput-$(IT_PHASE)-$(CONNECTIONS)
