# Ingest scaling (figure 14): one source, one payload, written as fast as possible
# into Loom (with and without a range index), LMDB, RocksDB and raw files.
# Included by the root Makefile (include mk/*.mk). Each run target appends RUNS runs
# of DURATION seconds to evaluation-output/is-<db>[<threads>]-<size>; a run's result
# is its one line starting with `db=` (progress lines start with `[ingest-scaling]`).
#
#   make is-build
#   make is-mach SIZE=64            (alias is-loom)    -> evaluation-output/is-mach-64
#   make is-mach-index SIZE=64                         -> evaluation-output/is-mach-index-64
#   make is-lmdb SIZE=64                               -> evaluation-output/is-lmdb-64
#   make is-rocksdb SIZE=64 THREADS=2                  -> evaluation-output/is-rocksdb2-64
#   make is-file SIZE=64 THREADS=2                     -> evaluation-output/is-file2-64
#   make is-table RUNS=5 DURATION=120 [THREADS=1]      all of the above for 8 64 256 1024 B + table
#   make is-report                                     table from the existing logs only
#   make is-dd [DD_MB=16384]                           direct-I/O write bandwidth reference
#
# Variables: RUNS (5), DURATION (s, 120), SIZE (bytes, 8), THREADS (1),
# TMP_DATA_DIR (scratch data, default tmp-data/ in the repo, git-ignored),
# IS_CPUS (optional taskset CPU list, e.g. IS_CPUS=1), CARGO_TARGET_DIR (target).

IS_RUNS      = $(or $(RUNS),5)
IS_DURATION  = $(or $(DURATION),120)
IS_SIZE      = $(or $(SIZE),8)
IS_THREADS   = $(or $(THREADS),1)
IS_SIZES     = 8 64 256 1024
# Direct-I/O reference write size: 16 GiB, long enough (~6 s) that a burst does not flatter it.
IS_DD_MB     = $(or $(DD_MB),16384)
TMP_DATA_DIR ?= $(CURDIR)/tmp-data
IS_STORAGE   = $(TMP_DATA_DIR)/ingest-scaling
IS_OUT       ?= evaluation-output
IS_BIN       = $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)/release/ingest-scaling
IS_PIN       = $(if $(IS_CPUS),taskset -c $(IS_CPUS))
# Run targets build first, unless IS_NO_BUILD is set (is-table builds once).
IS_DEP       = $(if $(IS_NO_BUILD),,is-build)

# Recipes pipe through tee: let a failing run fail the target.
is-%: SHELL = /bin/bash
is-%: .SHELLFLAGS = -o pipefail -c

# $(call is_runs,<log name>,<ingest-scaling flags>)
define is_runs
	@mkdir -p $(IS_OUT) $(TMP_DATA_DIR)
	@for i in $$(seq 1 $(IS_RUNS)); do \
	  echo "== $(1) run $$i/$(IS_RUNS) duration=$(IS_DURATION)s $$(date -u +%FT%TZ)" | tee -a $(IS_OUT)/$(1); \
	  $(IS_PIN) $(IS_BIN) $(2) --duration-s $(IS_DURATION) --storage-dir $(IS_STORAGE) 2>&1 \
	    | tee -a $(IS_OUT)/$(1) || exit 1; \
	done
endef

.PHONY: is-build is-mach is-loom is-mach-index is-lmdb is-rocksdb is-file is-table is-report is-dd

is-build:
	$(CARGO_BUILD_ALL)

is-mach is-loom: $(IS_DEP)
	$(call is_runs,is-mach-$(IS_SIZE),--db loom --data-size $(IS_SIZE))

is-mach-index: $(IS_DEP)
	$(call is_runs,is-mach-index-$(IS_SIZE),--db loom --index --data-size $(IS_SIZE))

is-lmdb: $(IS_DEP)
	$(call is_runs,is-lmdb-$(IS_SIZE),--db lmdb --data-size $(IS_SIZE))

is-rocksdb: $(IS_DEP)
	$(call is_runs,is-rocksdb$(IS_THREADS)-$(IS_SIZE),--db rocksdb --threads $(IS_THREADS) --data-size $(IS_SIZE))

is-file: $(IS_DEP)
	$(call is_runs,is-file$(IS_THREADS)-$(IS_SIZE),--db file --threads $(IS_THREADS) --data-size $(IS_SIZE))

# Runs every store at every size (sequentially: runs must not overlap), then prints
# the medians of the last RUNS runs of each log.
is-table: is-build
	@for s in $(IS_SIZES); do \
	  for t in is-mach is-mach-index is-lmdb is-rocksdb is-file; do \
	    $(MAKE) --no-print-directory $$t IS_NO_BUILD=1 SIZE=$$s THREADS=$(IS_THREADS) RUNS=$(IS_RUNS) DURATION=$(IS_DURATION) || exit 1; \
	  done; \
	done
	@bash baselines/is-table.sh --last $(IS_RUNS) --threads $(IS_THREADS) $(IS_OUT) | tee $(IS_OUT)/is-table.md

is-report:
	@bash baselines/is-table.sh --threads $(IS_THREADS) $(IS_OUT)

is-dd:
	@mkdir -p $(IS_OUT) $(TMP_DATA_DIR)
	@echo "== is-dd $$(date -u +%FT%TZ) of=$(TMP_DATA_DIR)/dd.bin" | tee -a $(IS_OUT)/is-dd
	dd if=/dev/zero of=$(TMP_DATA_DIR)/dd.bin bs=1M count=$(IS_DD_MB) oflag=direct 2>&1 | tee -a $(IS_OUT)/is-dd
	@rm -f $(TMP_DATA_DIR)/dd.bin
