# Bounded connections (issue 25):
#   make bench-connections [CONN_FLOOD=2500]
# opens CONN_FLOOD idle connections on each of loom-app's four listeners
# (10 000 in all by default; --max-connections 32) and, while they fill
# every limit, sends a valid replay, OTLP exports over gRPC and HTTP and
# InfluxQL queries; prints loom-app's threads and RSS before and during
# the flood (target: <= 100 threads, <= 256 MB) with the load average.
# The run is the connection_limits test with a larger flood; appends to
# $(EVAL_OUT)/bench-connections.

CONN_FLOOD ?= 2500

.PHONY: bench-connections
bench-connections:
	mkdir -p $(EVAL_OUT)
	@set -o pipefail; { echo "== bench-connections flood $(CONN_FLOOD) per listener $$(date -u +%FT%TZ), load $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	LOOM_IDLE_FLOOD=$(CONN_FLOOD) cargo test --release -p loom-app --test connection_limits -- \
		--nocapture --test-threads 1 idle_floods 2>&1 | grep -E '^(flood|after the valid|test )'; \
	echo "load after: $$(cut -d' ' -f1-3 /proc/loadavg)"; } | tee -a $(EVAL_OUT)/bench-connections
