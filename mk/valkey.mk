# The Valkey workload: a live Valkey (or Redis) server on 127.0.0.1 under a
# YCSB-A-like load (apps/valkey-workload). Included by the root Makefile.
#
# Recordings (the probes need root):
#   make record-valkey-p1 VALKEY_RECORD_DURATION=120   # request records only  -> recordings/valkey-p1
#   make record-valkey-p2 VALKEY_RECORD_DURATION=120   # + the server's syscalls -> recordings/valkey-p2
#   make record-valkey-p3 VALKEY_RECORD_DURATION=120   # + its port's packets   -> recordings/valkey-p3
#   make gen-valkey-p1 ...                             # SYNTHETIC instead (replay gen --workload valkey)
# Replays into loom-app (two terminals, like rocksdb-p1..p3 in mk/e2e.mk):
#   make e2e-mach-app QUERY=valkey-p1                  # endpoint, tees evaluation-output/e2e-mach-app-valkey-p1
#   make valkey-p1 REPLAY_DURATION=600                 # sender
# Probe effect of each probe (requests/s with noop telemetry; logs valkey-pe-*):
#   make valkey-pe-none valkey-pe-syscalls valkey-pe-both   (or valkey-pe-all)
#
# Variables: VALKEY_RECORD_DURATION (s, 120), VALKEY_RECORD_WARMUP (s, 5),
# VALKEY_PE_DURATION (s, 60), VALKEY_PE_WARMUP (s, 5), VALKEY_CLIENTS (8),
# VALKEY_RECORDS (100000), VALKEY_FLAGS (extra valkey-workload flags, e.g.
# --distribution uniform or --server-binary /usr/bin/valkey-server).

CARGO ?= cargo
CARGO_RELEASE_DIR ?= target/release
RECORDING_DIR ?= recordings
EVAL_OUT ?= evaluation-output
LOOM_APP_ADDR ?= 127.0.0.1:7878
REPLAY_DURATION ?= 620
REPLAY_SPEED ?= 1
REPLAY_FLAGS ?=
GEN_DURATION ?= 120
GEN_RATE ?= 100000
GEN_SEED ?= 1

VALKEY_RECORD_DURATION ?= 120
VALKEY_RECORD_WARMUP ?= 5
VALKEY_PE_DURATION ?= 60
VALKEY_PE_WARMUP ?= 5
VALKEY_CLIENTS ?= 8
VALKEY_RECORDS ?= 100000
VALKEY_FLAGS ?=

VALKEY_WORKLOAD = $(CARGO_RELEASE_DIR)/valkey-workload
VALKEY_COMMON = --clients $(VALKEY_CLIENTS) --records $(VALKEY_RECORDS) $(VALKEY_FLAGS)
VALKEY_PHASES := valkey-p1 valkey-p2 valkey-p3
valkey_flags_p1 :=
valkey_flags_p2 := --syscalls
valkey_flags_p3 := --syscalls --packets
valkey_pe_flags_none :=
valkey_pe_flags_syscalls := --syscalls
valkey_pe_flags_both := --syscalls --packets

.PHONY: valkey-build $(VALKEY_PHASES) $(addprefix record-,$(VALKEY_PHASES)) \
	$(addprefix gen-,$(VALKEY_PHASES)) valkey-pe-none valkey-pe-syscalls valkey-pe-both valkey-pe-all

valkey-build:
	$(CARGO_BUILD_ALL)

# Live recording of a phase.
$(addprefix record-,$(VALKEY_PHASES)): record-valkey-%: valkey-build
	mkdir -p $(RECORDING_DIR)
	$(VALKEY_WORKLOAD) $(valkey_flags_$*) $(VALKEY_COMMON) --warmup-seconds $(VALKEY_RECORD_WARMUP) \
		--duration-seconds $(VALKEY_RECORD_DURATION) --output-path $(RECORDING_DIR)/valkey-$*
	@ls -l $(RECORDING_DIR)/valkey-$*

# Synthetic recording of a phase (says SYNTHETIC in its header and output).
$(addprefix gen-,$(VALKEY_PHASES)): gen-valkey-%: valkey-build
	mkdir -p $(RECORDING_DIR)
	$(CARGO_RELEASE_DIR)/replay gen --workload valkey --phase $* \
		--duration-s $(GEN_DURATION) --rate $(GEN_RATE) --seed $(GEN_SEED) \
		--output $(RECORDING_DIR)/valkey-$*
	$(CARGO_RELEASE_DIR)/data-stats $(RECORDING_DIR)/valkey-$*

# Replay a recording into the endpoint at $(LOOM_APP_ADDR) for $(REPLAY_DURATION) s.
$(VALKEY_PHASES): valkey-%: valkey-build
	@if [ ! -f "$(RECORDING_DIR)/valkey-$*" ]; then \
		echo "missing recording $(RECORDING_DIR)/valkey-$*; make one with:"; \
		echo "  make record-valkey-$*   (live Valkey/Redis server with probes, as root)"; \
		echo "  make gen-valkey-$*      (synthetic)"; \
		exit 1; \
	fi
	$(CARGO_RELEASE_DIR)/tcp-replay --file-path $(RECORDING_DIR)/valkey-$* \
		--addr $(LOOM_APP_ADDR) --duration-s $(REPLAY_DURATION) --speed $(REPLAY_SPEED) $(REPLAY_FLAGS)

# Requests/s with telemetry counted and discarded: no probe, the syscall
# probe, both probes. Appends to evaluation-output/valkey-pe-<name> (not pe-*:
# figure 13 is the RocksDB probe effect).
valkey-pe-none valkey-pe-syscalls valkey-pe-both: valkey-pe-%: valkey-build
	mkdir -p $(EVAL_OUT)
	set -o pipefail; $(VALKEY_WORKLOAD) $(valkey_pe_flags_$*) $(VALKEY_COMMON) \
		--warmup-seconds $(VALKEY_PE_WARMUP) --duration-seconds $(VALKEY_PE_DURATION) \
		--alternative-recording noop 2>&1 | tee -a $(EVAL_OUT)/valkey-pe-$*

valkey-pe-all: valkey-pe-none valkey-pe-syscalls valkey-pe-both
