# Chunk encoder micro-benchmark (issue 21): the flusher's columnar encoder,
# current against the reference (pre-transpose) one, in thread CPU time over
# chunks of the ingest-scaling generator's 8 and 64 B records and
# telemetry-shaped KV and syscall records; rounds alternated in one run.
# Included by the root Makefile (include mk/*.mk).
#
#   make encode-bench [ENCODE_ROUNDS=5] [ENCODE_LEVEL=3]   -> evaluation-output/encode-bench

ENCODE_ROUNDS ?= 5
ENCODE_LEVEL  ?= 3
ENCODE_OUT    ?= evaluation-output

.PHONY: encode-bench
encode-bench:
	cargo build --release --workspace --example encode_bench
	@mkdir -p $(ENCODE_OUT)
	@echo "== encode-bench $$(date -u +%FT%TZ) load $$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $(ENCODE_OUT)/encode-bench
	$(or $(CARGO_TARGET_DIR),$(CURDIR)/target)/release/examples/encode_bench $(ENCODE_ROUNDS) $(ENCODE_LEVEL) | tee -a $(ENCODE_OUT)/encode-bench
