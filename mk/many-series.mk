# Many series (issue 22), each measured against a base revision (default main) side
# by side, base and head alternated within one run, the load average logged:
#
#   make many-series-base [MS_BASE=main]   build the base's three benchmark binaries from
#                                          `git archive` in its own target dir (MS_BASE_TARGET;
#                                          slow the first time)
#   make many-series-rss   [RUNS=3]        engine RSS: 10 000 series × 3 records/s for
#                                          MS_SECONDS (120) s of data, and the same plus 4
#                                          hot series (the base needs about 7.5 GB)
#   make many-series-query [RUNS=1]        P2 (max + p99.99) and count over a 60 s window
#                                          across 1, 10, 100 series holding the same records
#   make many-series-ingest [RUNS=3 DURATION=20]  single-series ingest (ingest-scaling
#                                          --db loom) at 8 and 64 B
#   make many-series                       all three
#
# Once this branch is merged, compare with the commit before the merge
# (MS_BASE=1a17dbd measured the branch against its branch point).
# Logs: evaluation-output/many-series-{rss,query,ingest}. MS_NO_BUILD=1 runs with the
# binaries already built (base and head).
# The benchmark sources are this tree's (crates/loom/examples/many_series.rs,
# crates/influxql/examples/many_series_query.rs), copied into the base so both
# sides run the same code against their own engine.

MS_BASE        ?= main
MS_RUNS         = $(or $(RUNS),3)
MS_QUERY_RUNS   = $(or $(RUNS),1)
MS_DURATION     = $(or $(DURATION),20)
MS_SECONDS     ?= 120
MS_DIR          = $(TMP_DATA_DIR)/many-series
MS_BASE_SRC     = $(MS_DIR)/base-src
MS_BASE_TARGET ?= $(MS_DIR)/base-target
MS_BASE_BIN     = $(MS_BASE_TARGET)/release
MS_HEAD_BIN     = $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)/release
MS_OUT          = $(EVAL_OUT)
MS_SERIES_CFGS  = "--series 10000" "--series 10000 --hot 4 --hot-rate 200000"
MS_DEP          = $(if $(MS_NO_BUILD),,many-series-base many-series-head)

many-series-%: SHELL = /bin/bash
many-series-%: .SHELLFLAGS = -o pipefail -c

.PHONY: many-series many-series-base many-series-head many-series-rss many-series-query many-series-ingest

many-series: many-series-rss many-series-query many-series-ingest

many-series-base:
	rm -rf $(MS_BASE_SRC) && mkdir -p $(MS_BASE_SRC)
	git archive $(MS_BASE) | tar -x -C $(MS_BASE_SRC)
	cp crates/loom/examples/many_series.rs $(MS_BASE_SRC)/crates/loom/examples/
	cp crates/influxql/examples/many_series_query.rs $(MS_BASE_SRC)/crates/influxql/examples/
	# Only the three binaries compared (not the whole base workspace).
	cd $(MS_BASE_SRC) && export CARGO_TARGET_DIR=$(MS_BASE_TARGET) && \
	  cargo build --release -p ingest-scaling && \
	  cargo build --release -p loom --example many_series && \
	  cargo build --release -p influxql --example many_series_query
	git rev-parse --short $(MS_BASE) > $(MS_BASE_TARGET)/base-revision

many-series-head:
	$(CARGO_BUILD_ALL)

# $(call ms_header,<log>): the run's date, revisions and load average.
define ms_header
	@mkdir -p $(MS_OUT) $(MS_DIR)
	@echo "== $(1) $$(date -u +%FT%TZ) base=$$(cat $(MS_BASE_TARGET)/base-revision 2>/dev/null || echo "$(MS_BASE)?") head=$$(git rev-parse --short HEAD) load: $$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $(MS_OUT)/$(1)
endef

many-series-rss: $(MS_DEP)
	$(call ms_header,many-series-rss)
	@for i in $$(seq 1 $(MS_RUNS)); do \
	  for cfg in $(MS_SERIES_CFGS); do \
	    for v in base head; do \
	      bin=$(MS_BASE_BIN)/examples/many_series; [ $$v = head ] && bin=$(MS_HEAD_BIN)/examples/many_series; \
	      $$bin $$cfg --seconds $(MS_SECONDS) --dir $(MS_DIR)/store 2>/dev/null | sed "s/^/variant=$$v /" | tee -a $(MS_OUT)/many-series-rss || exit 1; \
	    done; \
	  done; \
	done
	@echo "load after: $$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $(MS_OUT)/many-series-rss
	@awk '/^variant=/ { for (i = 1; i <= NF; i++) { split($$i, kv, "="); f[kv[1]] = kv[2] } \
	  k = "series=" f["series"] " hot=" f["hot"]; rss[k, f["variant"]] = rss[k, f["variant"]] " " f["rss_mb"]; keys[k] = 1 } \
	  END { print "| series | base RSS MB (runs) | head RSS MB (runs) |"; print "| --- | --- | --- |"; \
	  for (k in keys) print "| " k " |" rss[k, "base"] " |" rss[k, "head"] " |" }' $(MS_OUT)/many-series-rss | tee -a $(MS_OUT)/many-series-rss

many-series-query: $(MS_DEP)
	$(call ms_header,many-series-query)
	@for i in $$(seq 1 $(MS_QUERY_RUNS)); do \
	  for v in base head; do \
	    bin=$(MS_BASE_BIN)/examples/many_series_query; [ $$v = head ] && bin=$(MS_HEAD_BIN)/examples/many_series_query; \
	    $$bin --series 1,10,100 --dir $(MS_DIR)/query 2>/dev/null | sed "s/^/variant=$$v /" | tee -a $(MS_OUT)/many-series-query || exit 1; \
	  done; \
	done
	@echo "load after: $$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $(MS_OUT)/many-series-query

many-series-ingest: $(MS_DEP)
	$(call ms_header,many-series-ingest)
	@for i in $$(seq 1 $(MS_RUNS)); do \
	  for s in 8 64; do \
	    for v in base head; do \
	      bin=$(MS_BASE_BIN)/ingest-scaling; [ $$v = head ] && bin=$(MS_HEAD_BIN)/ingest-scaling; \
	      $$bin --db loom --data-size $$s --duration-s $(MS_DURATION) --storage-dir $(MS_DIR)/ingest 2>&1 \
	        | grep '^db=' | sed "s/^/variant=$$v size=$$s /" | tee -a $(MS_OUT)/many-series-ingest || exit 1; \
	    done; \
	  done; \
	done
	@echo "load after: $$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $(MS_OUT)/many-series-ingest
