# Storage cost: the same telemetry stored by Loom and by InfluxDB, bytes per
# record side by side (docs/chunk-format.md). Included by the root Makefile.
#
#   make gen-rocksdb-p1 gen-rocksdb-p2 gen-rocksdb-p3   # or record-rocksdb-p* (live)
#   make storage-bench [STORAGE_PHASES="rocksdb-p1 rocksdb-p2"] [STORAGE_SPEED=5] [STORAGE_LEVEL=3]
#
# Output: evaluation-output/storage-bench (STORAGE lines per system and
# recording, Loom's per-measurement storage lines).

.PHONY: storage-bench
storage-bench:
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT)
	set -o pipefail; bash baselines/storage-bench/run.sh 2>&1 | tee $(EVAL_OUT)/storage-bench
