# Soak benchmark (issue 25, scripts/soak.py): one loom-app for SOAK_MIN minutes under a
# telemetry recording replayed at SOAK_SPEED times its pace (looped), OTLP spans posted
# every second, one InfluxQL statement per second, and retention; every 10 s a row of RSS,
# threads, open fds, ingest rate, drops and query p50/p99 into a CSV, then a plot.
#
#   make soak SOAK_MIN=60                       # the long run: figures/data/soak.csv, figures/figures/soak.png
#   make soak SOAK_MIN=10 SOAK_RECORDING=recordings/rocksdb-p2 SOAK_SPEED=4
#   make soak-smoke                             # what make test runs: 2 minutes, synthetic P3, scratch outputs
#
# The recording defaults to a live RocksDB P3 one (make record-rocksdb-p3); when it is
# missing, a synthetic P3 (replay gen) is made and used, and the run says so.
# Ends with `SOAK-SUMMARY` (RSS growth after the first 5 minutes, query p99 of the first
# and last quarter, drops); exits non-zero if loom-app dies, RSS passes SOAK_MAX_RSS_MB,
# a statement or an OTLP post fails.

SOAK_MIN ?= 60
SOAK_SPEED ?= 3
SOAK_SPANS_PER_S ?= 2000
# Bytes on disk: at 3x a live P3 the store reaches 512 MiB within about 2 minutes, so the
# RSS after the first 5 minutes is that of a store at its retention bound.
SOAK_RETENTION_BYTES ?= 536870912
SOAK_MAX_RSS_MB ?= 2048
SOAK_RECORDING ?= $(RECORDING_DIR)/rocksdb-p3
SOAK_SYNTHETIC := $(RECORDING_DIR)/soak-synthetic-p3
SOAK_OUT ?= figures
# Extra loom-app flags, e.g. SOAK_APP_FLAGS=--index-cache-bytes=268435456
SOAK_APP_FLAGS ?=

.PHONY: soak soak-smoke

# A synthetic P3 of 10 s for runs without a live recording.
$(SOAK_SYNTHETIC): | build
	mkdir -p $(RECORDING_DIR)
	$(CARGO_RELEASE_DIR)/replay gen --workload rocksdb --phase p3 --duration-s 10 --seed 25 --output $@

soak: build figures-deps
	@rec=$(SOAK_RECORDING); if [ ! -f "$$rec" ]; then \
	  echo "soak: $$rec missing (make record-rocksdb-p3 for a live one): using a synthetic P3"; \
	  $(MAKE) --no-print-directory $(SOAK_SYNTHETIC); rec=$(SOAK_SYNTHETIC); fi; \
	$(FIGURES_VENV)/bin/python scripts/soak.py --minutes $(SOAK_MIN) --recording "$$rec" \
	  --speed $(SOAK_SPEED) --spans-per-s $(SOAK_SPANS_PER_S) --retention-bytes $(SOAK_RETENTION_BYTES) \
	  --max-rss-mb $(SOAK_MAX_RSS_MB) --bin $(CARGO_RELEASE_DIR) --work $(TMP_DATA_DIR)/soak \
	  --csv $(SOAK_OUT)/data/soak.csv --png $(SOAK_OUT)/figures/soak.png \
	  $(foreach f,$(SOAK_APP_FLAGS),--app-flag=$(f))

soak-smoke:
	$(MAKE) --no-print-directory soak SOAK_MIN=2 SOAK_RECORDING=$(SOAK_SYNTHETIC) \
	  SOAK_RETENTION_BYTES=268435456 SOAK_MAX_RSS_MB=1536 SOAK_OUT=$(TMP_DATA_DIR)/soak-smoke
