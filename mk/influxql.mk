# InfluxQL query path benchmarks. Included by the root Makefile (include mk/*.mk).

# A valid query's latency alone and while other clients send hostile
# statements (deep nesting, long chains, many statements, huge numbers, NUL)
# in a loop, side by side (issue 19's target: within 2x).
#   make hostile-latency [HL_RECORDS=500000] [HL_ROUNDS=10] [HL_QUERIES=50] [HL_CLIENTS=1]
HL_RECORDS ?= 500000
HL_ROUNDS  ?= 10
HL_QUERIES ?= 50
HL_CLIENTS ?= 1

.PHONY: hostile-latency
hostile-latency:
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	$(CARGO_RELEASE_DIR)/examples/hostile_latency --records-per-series $(HL_RECORDS) \
	    --rounds $(HL_ROUNDS) --queries $(HL_QUERIES) --hostile-clients $(HL_CLIENTS)
