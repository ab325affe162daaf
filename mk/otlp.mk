# OTLP ingest benchmark. Included by the root Makefile (include mk/*.mk).
#
#   make otlp-bench                       # loom-app from 1 and 4 clients, then influxd the same
#   make otlp-bench OTLP_INFLUX=0         # loom-app only
#   make otlp-bench OTLP_SPANS=3000000 OTLP_CLIENTS=4
#   make otlp-bench OTLP_INFLUX=0 OTLP_ACKS=durable   # loom-app's durable acknowledgements only
#   make otlp-bench OTLP_INFLUX=0 OTLP_APP_FLAGS="--queue-capacity 4"   # clients throttled, retry
#
# Each run: a fresh loom-app (OTLP/gRPC on 127.0.0.1:14317, InfluxDB API on
# 127.0.0.1:18186) takes OTLP_SPANS spans (512 per request, ~390-byte
# records) whose start times cover OTLP_DATA_S seconds, from OTLP_CLIENTS
# concurrent clients (one service each), with each --otlp-ack mode of
# OTLP_ACKS in turn (durable: answered once in the fsynced intake log;
# queued: once queued); the load generator checks that
# every span is stored, then times the p99.99 of span duration over that
# window (one span name, and the whole service) against brute force. Then
# the same spans as line protocol into a fresh influxd (make influxd's
# settings) through influx-app's HTTP client, 5000 points per /write.
# Lines: OTLP-LOAD, OTLP-INGEST (spans/s, loss, ack latency p50/p99), OTLP-QUERY (ms);
# log: evaluation-output/otlp-bench.

CARGO ?= cargo
CARGO_RELEASE_DIR ?= target/release
EVAL_OUT ?= evaluation-output
TMP_DATA_DIR ?= tmp-data
OTLP_SPANS ?= 1200000
OTLP_DATA_S ?= 60
OTLP_CLIENTS ?= 1 4
OTLP_ACKS ?= durable queued
OTLP_INFLUX ?= 1
OTLP_APP_FLAGS ?=

.PHONY: otlp-bench
otlp-bench: deps
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT)
	set -o pipefail; BIN=$(CARGO_RELEASE_DIR) TMP_DATA_DIR=$(TMP_DATA_DIR) OTLP_SPANS=$(OTLP_SPANS) \
		OTLP_DATA_S=$(OTLP_DATA_S) OTLP_CLIENTS="$(OTLP_CLIENTS)" OTLP_ACKS="$(OTLP_ACKS)" OTLP_INFLUX=$(OTLP_INFLUX) \
		OTLP_APP_FLAGS="$(OTLP_APP_FLAGS)" \
		bash scripts/otlp-bench.sh 2>&1 | tee $(EVAL_OUT)/otlp-bench
