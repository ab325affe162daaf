# Storage cost: the same telemetry stored by Loom, by InfluxDB and as Parquet
# + zstd, bytes per record side by side per measurement (docs/chunk-format.md).
# Included by the root Makefile.
#
#   make record-rocksdb-p1 record-rocksdb-p2 record-rocksdb-p3 RECORD_DURATION=10 RECORD_WARMUP=5
#   make record-valkey-p3 VALKEY_RECORD_DURATION=10      # live recordings (root: eBPF probes)
#   make storage-bench [STORAGE_CASES="rocksdb-p1 otlp sparse"] [STORAGE_SPEED=1] [STORAGE_LEVEL=1]
#
# Cases: every recording found (rocksdb-p1..p3, valkey-p3), OTLP spans from
# otlp-load, and many sparse series through /write (baselines/storage-bench/run.sh).
# Output: evaluation-output/storage-bench (`STORAGE case=… measurement=…` lines
# with Loom / InfluxDB / Parquet bytes per record, `STORAGE-CASE` totals with
# ingest wall times).

.PHONY: storage-bench
storage-bench:
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT)
	set -o pipefail; bash baselines/storage-bench/run.sh 2>&1 | tee $(EVAL_OUT)/storage-bench

# Query latency on compressed vs uncompressed chunks (baselines/storage-bench/queries.sh):
# loom-app's ablation (no index vs time + range index) in process, then P1, P2
# and a no-index scan over the last 60 s with `loom query --store`, cold and
# warm page cache (needs root to drop caches), levels alternated per round.
#   make storage-queries [QUERIES_ROUNDS=2 QUERIES_LEVELS="1 0"]  -> evaluation-output/storage-queries
.PHONY: storage-queries
storage-queries:
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT)
	set -o pipefail; RECORDING=$(RECORDING_DIR)/rocksdb-p2 QUERIES_ROUNDS=$(or $(QUERIES_ROUNDS),2) \
		QUERIES_LEVELS="$(or $(QUERIES_LEVELS),1 0)" bash baselines/storage-bench/queries.sh 2>&1 | tee $(EVAL_OUT)/storage-queries
