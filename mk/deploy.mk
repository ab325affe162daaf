# Service deployment: systemd units and examples under deploy/ (docs/deploy.md).
#   make deploy-check   systemd-analyze verify the units (no systemd needed
#                       running), check their flags against the built binaries
#   make ingest-throughput-tls   plain vs TLS ingest throughput, alternated

CARGO_RELEASE_DIR ?= target/release

.PHONY: deploy-check
deploy-check:
	BIN=$(CARGO_RELEASE_DIR) bash scripts/deploy-check.sh

# What TLS costs the telemetry stream: `make ingest-throughput` (one
# `tcp-replay --no-wait` connection into one fresh loom-app) with plain TCP
# and with TLS, alternated RUNS times; RESULT lines end with tls=0 / tls=1.
#   make ingest-throughput-tls [IT_PHASE=p2] [THROUGHPUT_SECONDS=20] [RUNS=3] [IT_PORT=17878]
.PHONY: ingest-throughput-tls
ingest-throughput-tls: e2e-build
	@test -f $(RECORDING_DIR)/rocksdb-$(IT_PHASE) || { echo "missing $(RECORDING_DIR)/rocksdb-$(IT_PHASE): make gen-rocksdb-$(IT_PHASE) or record-rocksdb-$(IT_PHASE)"; exit 1; }
	mkdir -p $(EVAL_OUT)
	@set -o pipefail; for i in $$(seq 1 $(or $(RUNS),3)); do \
	  for tls in "" 1; do \
	    echo "== ingest-throughput-tls rocksdb-$(IT_PHASE) tls=$${tls:-0} run $$i $$(date -u +%FT%TZ)"; \
	    TMP_DATA_DIR=$(TMP_DATA_DIR) INGEST_TLS=$$tls bash scripts/ingest-throughput.sh $(CARGO_RELEASE_DIR) \
	      $(RECORDING_DIR)/rocksdb-$(IT_PHASE) 1 $(THROUGHPUT_SECONDS) 0 $(or $(IT_PORT),17878) || exit 1; \
	  done; \
	done 2>&1 | tee -a $(EVAL_OUT)/ingest-throughput-tls-$(IT_PHASE)
