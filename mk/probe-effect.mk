# Probe effect (figure 13) and live RocksDB recordings.
# Included by the root Makefile (include mk/*.mk; its SHELL is bash with pipefail).
# Needs root: the eBPF probes load into the kernel and the ramdisk is mounted.
#
# Recordings of the live workload (phases of docs/design.md), for e2e replays:
#   make record-rocksdb-p1 RECORD_DURATION=120   # KV op records only      -> recordings/rocksdb-p1
#   make record-rocksdb-p2 RECORD_DURATION=120   # + syscalls              -> recordings/rocksdb-p2
#   make record-rocksdb-p3 RECORD_DURATION=120   # + page cache            -> recordings/rocksdb-p3
#
# Probe effect: the live P3 workload sends its telemetry to an endpoint; the
# RocksDB throughput lost compared with the noop endpoint is the probe effect.
#   make pe-build
#   make pe-rocksdb-noop                          # -> evaluation-output/pe-noop
#   make pe-file-writer-app   (terminal 1)        # endpoint: frames appended to a file
#   make pe-rocksdb OUT_FILE=file-writer          # -> evaluation-output/pe-file-writer
#   make pe-mach-app          (terminal 1, alias pe-loom-app): loom-app --query probe-effect
#   make pe-rocksdb OUT_FILE=loom                 # -> evaluation-output/pe-loom
#   make influxd; make pe-influx-app (terminal 1) # InfluxDB endpoint (mk/influx.mk), then:
#   make pe-rocksdb OUT_FILE=influx               # -> evaluation-output/pe-influx
#   make pe-all                                   # noop / file / Loom / InfluxDB alternated PE_ROUNDS times,
#                                                 # endpoints (and a fresh influxd per round) started for you
#
# Variables: PE_DURATION (s, 120), PE_WARMUP (s, 15), PE_ADDR (127.0.0.1:7878, the
# loom-app default), PE_INSTANCES (3), PE_THREADS (16), PE_FLAGS (extra workload
# flags), PE_ROUNDS (3, rounds of pe-all), RECORD_DURATION (s, 120), RECORD_WARMUP (s, 15), RECORD_FLAGS,
# RAMDISK_MOUNT (/mnt/loom-ramdisk), RAMDISK_SIZE (4G).
#
# RocksDB data of probe-effect runs lives on a memory-backed ext4 file system at
# RAMDISK_MOUNT (an ext4 image in /dev/shm on a loop device, mounted here when
# absent) so disk noise does not blur the probe effect while page-cache events
# still happen (tmpfs pages bypass the traced page-cache insertion). If the
# loop mount fails, /dev/shm is used directly (then P3 sees few page-cache events).

CARGO ?= cargo
CARGO_RELEASE_DIR ?= target/release
RECORDING_DIR ?= recordings
EVAL_OUT ?= evaluation-output
TMP_DATA_DIR ?= tmp-data

PE_DURATION ?= 120
PE_WARMUP ?= 15
PE_ADDR ?= 127.0.0.1:7878
PE_INSTANCES ?= 3
PE_THREADS ?= 16
PE_FLAGS ?=
PE_ROUNDS ?= 3
OUT_FILE ?= loom
RECORD_DURATION ?= 120
RECORD_WARMUP ?= 15
RECORD_FLAGS ?=
RAMDISK_MOUNT ?= /mnt/loom-ramdisk
RAMDISK_SIZE ?= 4G
RAMDISK_IMAGE ?= /dev/shm/loom-ramdisk.ext4

PE_WORKLOAD = $(CARGO_RELEASE_DIR)/rocksdb-workload
PE_P3 = --syscalls --page-cache
PE_COMMON = --instances $(PE_INSTANCES) --threads-per-instance $(PE_THREADS) \
	--warmup-seconds $(PE_WARMUP) --duration-seconds $(PE_DURATION) $(PE_FLAGS)
# Resolved when a recipe runs, after pe-ramdisk: the mount, or the /dev/shm fallback.
PE_DB = $$(if mountpoint -q $(RAMDISK_MOUNT); then echo $(RAMDISK_MOUNT); else echo /dev/shm; fi)/rocksdb-workload

RECORD_PHASES := p1 p2 p3
record_flags_p1 :=
record_flags_p2 := --syscalls
record_flags_p3 := --syscalls --page-cache

.PHONY: pe-build pe-ramdisk pe-rocksdb-noop pe-rocksdb pe-file-writer-app pe-mach-app pe-loom-app \
	pe-all $(addprefix record-rocksdb-,$(RECORD_PHASES))

pe-build:
	$(CARGO_BUILD_ALL)

# Memory-backed ext4 at RAMDISK_MOUNT (idempotent; falls back to /dev/shm).
pe-ramdisk:
	@if mountpoint -q $(RAMDISK_MOUNT); then \
		echo "pe-ramdisk: $(RAMDISK_MOUNT) already mounted"; \
	else \
		mkdir -p $(RAMDISK_MOUNT) && \
		truncate -s $(RAMDISK_SIZE) $(RAMDISK_IMAGE) && \
		mkfs.ext4 -q -F $(RAMDISK_IMAGE) && \
		mount -o loop $(RAMDISK_IMAGE) $(RAMDISK_MOUNT) && \
		echo "pe-ramdisk: mounted $(RAMDISK_IMAGE) ($(RAMDISK_SIZE)) at $(RAMDISK_MOUNT)" || \
		{ rm -f $(RAMDISK_IMAGE); echo "pe-ramdisk: loop mount failed; RocksDB data goes to /dev/shm" >&2; }; \
	fi

# Live recordings: RocksDB data on disk under TMP_DATA_DIR (page-cache misses are real).
$(addprefix record-rocksdb-,$(RECORD_PHASES)): record-rocksdb-%: pe-build
	mkdir -p $(RECORDING_DIR) $(TMP_DATA_DIR)
	$(PE_WORKLOAD) $(record_flags_$*) --warmup-seconds $(RECORD_WARMUP) \
		--duration-seconds $(RECORD_DURATION) --rocksdb-path $(TMP_DATA_DIR)/rocksdb-workload \
		--output-path $(RECORDING_DIR)/rocksdb-$* $(RECORD_FLAGS)
	@ls -l $(RECORDING_DIR)/rocksdb-$*

pe-rocksdb-noop: pe-build pe-ramdisk
	mkdir -p $(EVAL_OUT)
	@echo "== pe-noop run $$(date -u +%FT%TZ)" | tee -a $(EVAL_OUT)/pe-noop
	$(PE_WORKLOAD) $(PE_P3) $(PE_COMMON) --rocksdb-path $(PE_DB) \
		--alternative-recording noop 2>&1 | tee -a $(EVAL_OUT)/pe-noop

# Live P3 workload sending to the endpoint at PE_ADDR; appends to evaluation-output/pe-$(OUT_FILE)
# (one `== pe-<name> run` header per run, so repeated runs give the spread).
pe-rocksdb: pe-build pe-ramdisk
	mkdir -p $(EVAL_OUT)
	@echo "== pe-$(OUT_FILE) run $$(date -u +%FT%TZ)" | tee -a $(EVAL_OUT)/pe-$(OUT_FILE)
	$(PE_WORKLOAD) $(PE_P3) $(PE_COMMON) --rocksdb-path $(PE_DB) \
		--alternative-recording tcp --addr $(PE_ADDR) 2>&1 | tee -a $(EVAL_OUT)/pe-$(OUT_FILE)

# Endpoints (run in another terminal before `make pe-rocksdb`); each exits
# after one connection ended.
# Their logs (pe-<endpoint>-app) are appended, one `== pe-<endpoint>-app run` header
# per run, like the workload's: each run ends with the endpoint's `Endpoint CPU:` line.
pe-file-writer-app: pe-build
	mkdir -p $(EVAL_OUT) $(TMP_DATA_DIR)
	@echo "== pe-file-writer-app run $$(date -u +%FT%TZ)" | tee -a $(EVAL_OUT)/pe-file-writer-app
	$(CARGO_RELEASE_DIR)/file-writer-app --addr $(PE_ADDR) --connections 1 \
		--output-path $(TMP_DATA_DIR)/pe-file-writer.frames 2>&1 | tee -a $(EVAL_OUT)/pe-file-writer-app
	rm -f $(TMP_DATA_DIR)/pe-file-writer.frames

pe-mach-app pe-loom-app: pe-build
	mkdir -p $(EVAL_OUT)
	@echo "== pe-loom-app run $$(date -u +%FT%TZ)" | tee -a $(EVAL_OUT)/pe-loom-app
	$(CARGO_RELEASE_DIR)/loom-app --addr $(PE_ADDR) --query probe-effect \
		--temp-store $(TMP_DATA_DIR) --stop-after-connections 1 2>&1 | tee -a $(EVAL_OUT)/pe-loom-app

# noop, file writer, Loom and InfluxDB alternated PE_ROUNDS times (so drift of
# the machine spreads over all endpoints), each endpoint started in the
# background; influxd restarts empty every round (mk/influx.mk).
pe-all: pe-build pe-ramdisk
	@command -v influxd >/dev/null || { echo "pe-all: influxd is missing; apt-get install influxdb influxdb-client (or make deps)"; exit 1; }
	for round in $$(seq 1 $(PE_ROUNDS)); do \
		echo "== pe-all round $$round of $(PE_ROUNDS)"; \
		$(MAKE) --no-print-directory pe-rocksdb-noop || exit 1; \
		$(MAKE) --no-print-directory pe-file-writer-app > /dev/null & sleep 1; \
		$(MAKE) --no-print-directory pe-rocksdb OUT_FILE=file-writer || exit 1; wait; \
		$(MAKE) --no-print-directory pe-loom-app > /dev/null & sleep 2; \
		$(MAKE) --no-print-directory pe-rocksdb OUT_FILE=loom || exit 1; wait; \
		$(MAKE) --no-print-directory influxd || exit 1; \
		$(MAKE) --no-print-directory pe-influx-app > /dev/null & sleep 2; \
		$(MAKE) --no-print-directory pe-rocksdb OUT_FILE=influx; status=$$?; wait; \
		$(MAKE) --no-print-directory influxd-stop; [ $$status -eq 0 ] || exit 1; \
	done
	@grep -H "Average rocksdb rate per sec" $(EVAL_OUT)/pe-noop $(EVAL_OUT)/pe-file-writer $(EVAL_OUT)/pe-loom $(EVAL_OUT)/pe-influx
