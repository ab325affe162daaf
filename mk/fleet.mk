# Parquet export and fleet questions (docs/fleet.md). Included by the root Makefile.
#
#   make fleet-build    # loom-fleet (DataFusion): its own workspace, into target/release/
#   make fleet-test     # loom-fleet built and linted, then the tests that need it
#                       #   (three hosts, moto, DuckDB, PySpark); CI runs it after make test
#   make fleet-export-bench                   # export throughput and size, one core
#   make fleet-query-bench FLEET_HOSTS=10 FLEET_RECORDS=100000000   # 1 billion rows
#
# fleet-export-bench: a synthetic store of FLEET_EXPORT_RECORDS syscall
# records (16 series, 24-byte records) exported to a local tree; line EXPORT
# (records/s wall and per CPU second of the export thread, Parquet and store
# bytes per record). fleet-query-bench: FLEET_HOSTS such stores of
# FLEET_RECORDS records each exported into one tree (each store deleted after
# its export), then the fleet-wide p99.99 of duration_us timed with
# `loom fleet query` (DataFusion), DuckDB and Spark local, side by side.
# Logs: evaluation-output/fleet-*.

CARGO ?= cargo
CARGO_RELEASE_DIR ?= target/release
EVAL_OUT ?= evaluation-output
TMP_DATA_DIR ?= tmp-data
FLEET_EXPORT_RECORDS ?= 20000000
FLEET_HOSTS ?= 4
FLEET_RECORDS ?= 25000000
FLEET_TREE ?= $(TMP_DATA_DIR)/fleet-tree
FLEET_PY ?= target/fleet-venv/bin/python

FLEET_MANIFEST := crates/fleet/Cargo.toml
# Its own target dir: its feature set (tokio, arrow, parquet as DataFusion
# asks for them) differs from the root workspace's, so little would be
# shared, and a build of it never holds the root target/'s lock. The binary
# is copied beside loom, where `loom fleet query` looks for it.
FLEET_TARGET := $(CURDIR)/target/fleet
FLEET_CARGO_FLAGS := --release --manifest-path $(FLEET_MANIFEST) --target-dir $(FLEET_TARGET)

.PHONY: fleet-build fleet-lint fleet-test fleet-export-bench fleet-query-bench

# DataFusion is kept out of the root workspace (and so out of `make test`'s
# one build): loom-fleet is crates/fleet's own workspace.
fleet-build: deps
	$(CARGO) build $(FLEET_CARGO_FLAGS) --bin loom-fleet
	mkdir -p $(CARGO_RELEASE_DIR)
	cp -f $(FLEET_TARGET)/release/loom-fleet $(CARGO_RELEASE_DIR)/loom-fleet

fleet-lint: deps
	$(CARGO) fmt --manifest-path $(FLEET_MANIFEST) -- --check
	$(CARGO) clippy $(FLEET_CARGO_FLAGS) --all-targets -- -D warnings

# The tests that need loom-fleet are #[ignore]d in `make test` and run here,
# with the binaries of the root workspace's one build (CARGO_BUILD_ALL) and
# built `--workspace` (not `-p`: one package alone unifies features apart
# and rebuilds arrow, tokio and more, 10+ minutes, for nothing); the
# three-host test builds the pinned venv (moto, DuckDB, PySpark) on first use.
fleet-test: deps fleet-build
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	$(CARGO) test $(FLEET_CARGO_FLAGS)
	cargo test --release --workspace --test three_hosts -- --ignored
	cargo test --release --workspace --test export_fleet -- --ignored
	$(MAKE) --no-print-directory fleet-lint

fleet-export-bench: deps
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	mkdir -p $(EVAL_OUT) $(TMP_DATA_DIR)
	$(CARGO_RELEASE_DIR)/examples/export-bench --records $(FLEET_EXPORT_RECORDS) \
		--dir $(TMP_DATA_DIR)/fleet-export-bench --drop-store | tee $(EVAL_OUT)/fleet-export-bench.log
	rm -rf $(TMP_DATA_DIR)/fleet-export-bench

fleet-query-bench: deps fleet-build
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	test -x $(FLEET_PY) || cargo test --release --workspace --test s3
	mkdir -p $(EVAL_OUT)
	rm -rf $(FLEET_TREE)
	for i in $$(seq 1 $(FLEET_HOSTS)); do \
		$(CARGO_RELEASE_DIR)/examples/export-bench --records $(FLEET_RECORDS) --host bench-$$i \
			--dir $(TMP_DATA_DIR)/fleet-host --tree $(FLEET_TREE) --drop-store || exit 1; \
	done 2>&1 | tee $(EVAL_OUT)/fleet-query-bench.log
	du -sb $(FLEET_TREE) | tee -a $(EVAL_OUT)/fleet-query-bench.log
	{ /usr/bin/time -f "QUERY engine=datafusion seconds=%e max_rss_kb=%M" $(CARGO_RELEASE_DIR)/loom fleet query --from $(FLEET_TREE) --format csv \
		"SELECT count(*) AS n, max(duration_us) AS mx, percentile(duration_us, 99.99) AS p9999 FROM syscall" ; \
	  /usr/bin/time -f "QUERY engine=duckdb seconds=%e max_rss_kb=%M" $(FLEET_PY) docs/fleet/fleet_questions.py --engine duckdb --tree $(FLEET_TREE) --name '' --fleet-only ; \
	  /usr/bin/time -f "QUERY engine=spark seconds=%e max_rss_kb=%M" $(FLEET_PY) docs/fleet/fleet_questions.py --engine spark --tree $(FLEET_TREE) --name '' --fleet-only --spark-memory 6g ; \
	} 2>&1 | tee -a $(EVAL_OUT)/fleet-query-bench.log
