# Index paging (issue 25): a store whose range-index summaries are many times the
# index-cache budget (crates/loom/examples/reopen.rs: KV records of 24 bytes, 4 sources,
# a duration index), reopened alternately with that budget and with one that holds every
# summary (what a reopen did before paging), side by side: open time, RSS after open,
# index memory, and a P1-style question (max and p99.99 of one source) over old data
# whose summaries and time-index (directory) entries are paged out, first read (loaded
# from the segment index files) and then cached. Included by the root Makefile.
#
#   make index-paging [INDEX_PAGING_RECORDS=150000000] [INDEX_PAGING_BUDGET=8388608]
#
# Defaults: 150 M records in 64 MiB segments hold about 93 MB of summaries, 11 times the
# 8 MiB budget; one segment's summaries take about 1.6 MB, so the cache (what the recent
# summaries leave of the budget, at least 4 MiB) holds the segments the question's window
# touches (a window longer than the cache holds is answered within the budget too,
# reading its segments' summaries again on each of the question's passes: a few ms per
# segment on this machine).
#
# The first reopen follows the write in the same process (its RSS includes the
# writer's); the alternated ones after it are fresh processes. `RSS-CHECK` compares RSS
# after open and after the P1 questions with the budget + 64 MB, and after the question
# over everything (which fills the 32 MiB chunk cache) with that plus the chunk cache.
# Output: evaluation-output/index-paging. The store goes to $(TMP_DATA_DIR)/index-paging
# (about 3.9 GB for 150 M records; removed at the end).

INDEX_PAGING_RECORDS ?= 150000000
INDEX_PAGING_SEGMENT_MIB ?= 64
INDEX_PAGING_BUDGET ?= 8388608
INDEX_PAGING_ALL ?= 1073741824
INDEX_PAGING_DIR ?= $(TMP_DATA_DIR)/index-paging

.PHONY: index-paging
index-paging:
	cargo build --release -p loom --example reopen 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT) $(TMP_DATA_DIR)
	set -o pipefail; ( \
	  echo "load: $$(cat /proc/loadavg)"; \
	  $(CARGO_RELEASE_DIR)/examples/reopen --dir $(INDEX_PAGING_DIR) --records $(INDEX_PAGING_RECORDS) \
	    --segment-mib $(INDEX_PAGING_SEGMENT_MIB) --index-cache-bytes $(INDEX_PAGING_BUDGET) && \
	  for b in $(INDEX_PAGING_BUDGET) $(INDEX_PAGING_ALL) $(INDEX_PAGING_BUDGET) $(INDEX_PAGING_ALL); do \
	    echo "load: $$(cat /proc/loadavg)"; \
	    $(CARGO_RELEASE_DIR)/examples/reopen --dir $(INDEX_PAGING_DIR) --reopen-only --index-cache-bytes $$b || exit 1; \
	  done ) 2>&1 | tee $(EVAL_OUT)/index-paging
	rm -rf $(INDEX_PAGING_DIR)
