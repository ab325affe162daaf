# Acknowledged TCP stream (wire protocol 2 with ACKs; issue 26):
#   make acked-throughput [ACK_RUNS=3] [ACK_KILLS=10] [ACK_GEN_RATE=400000] [ACK_GEN_S=10]
# sends one synthetic P2 recording (replay gen; ACK_GEN_RATE × ACK_GEN_S,
# about 10 M records by default) with `tcp-replay --no-wait` into a fresh
# loom-app, unacknowledged and acknowledged, alternated ACK_RUNS times
# (records/s, ack latency p50/p99), then once more acknowledged while
# loom-app is SIGKILLed ACK_KILLS times (zero loss). Appends to
# $(EVAL_OUT)/acked-throughput.

ACK_RUNS ?= 3
ACK_KILLS ?= 10
ACK_GEN_RATE ?= 400000
ACK_GEN_S ?= 10
ACK_RECORDING = $(RECORDING_DIR)/acks-p2-$(ACK_GEN_RATE)-$(ACK_GEN_S)

$(ACK_RECORDING):
	mkdir -p $(RECORDING_DIR)
	$(CARGO_RELEASE_DIR)/replay gen --workload rocksdb --phase p2 --duration-s $(ACK_GEN_S) \
		--rate $(ACK_GEN_RATE) --seed 26 --output $@

.PHONY: acked-throughput
acked-throughput: e2e-build
	$(MAKE) --no-print-directory $(ACK_RECORDING)
	mkdir -p $(EVAL_OUT)
	@set -o pipefail; echo "== acked-throughput $(ACK_RECORDING) $$(date -u +%FT%TZ)" | tee -a $(EVAL_OUT)/acked-throughput; \
	TMP_DATA_DIR=$(TMP_DATA_DIR) bash scripts/acked-throughput.sh $(CARGO_RELEASE_DIR) $(ACK_RECORDING) \
		$(ACK_RUNS) $(ACK_KILLS) 2>&1 | tee -a $(EVAL_OUT)/acked-throughput
