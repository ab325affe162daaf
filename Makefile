# Loom: every experiment is a target here or in mk/*.mk; docs/reproduce.md lists them.
#
#   make demo     the main job: telemetry flows in, exact queries come out
#   make test     install what is missing, build, run every test
#
# Paths default inside the repository (git-ignored) and can be overridden:
#   TMP_DATA_DIR   scratch stores and benchmark data   (tmp-data/)
#   RECORDING_DIR  telemetry recordings                 (recordings/)

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
export PATH := $(HOME)/.cargo/bin:$(PATH)

TMP_DATA_DIR  ?= $(CURDIR)/tmp-data
RECORDING_DIR ?= $(CURDIR)/recordings
EVAL_OUT      ?= $(CURDIR)/evaluation-output
CARGO_RELEASE_DIR ?= $(CURDIR)/target/release
NPROC         := $(shell nproc)

.PHONY: all deps build test demo demo-engine lint clean-data

all: build

deps:
	@bash scripts/install-deps.sh

# One build serves every target: the whole workspace, every binary and
# example, with one feature set. A `cargo build -p …` set unifies features
# differently and recompiles shared crates (tokio, loom, telemetry, …), so
# every make target builds with this same command and a second one compiles
# nothing.
CARGO_BUILD_ALL := cargo build --release --workspace --bins --examples

build: deps
	$(CARGO_BUILD_ALL)

# The test command CI runs (.ci/run). Release mode: the property, crash and
# end-to-end tests ingest millions of records.
test: deps
	@mkdir -p target
	@echo "$(CARGO_BUILD_ALL)  (log: target/build.log)"
	@$(CARGO_BUILD_ALL) > target/build.log 2>&1 || { \
	  echo "build failed; its errors:"; grep -E -A12 '^(error|warning)' target/build.log | head -n 150; \
	  echo "..."; tail -n 20 target/build.log; df -h . ; exit 1; }
	@tail -n 1 target/build.log
	cargo test --release --workspace --no-fail-fast
	$(MAKE) --no-print-directory fuzz-smoke FUZZ_BUDGET_S=3
	$(MAKE) --no-print-directory figures-test
	$(MAKE) --no-print-directory soak-smoke
	$(MAKE) --no-print-directory deploy-check

# What CI runs before the tests (.ci/run): formatting, clippy with every
# warning an error (the workspace's lints, e.g. too_many_lines, are in
# Cargo.toml's [workspace.lints] and clippy.toml), the file-length rule and no
# import cycle between a crate's top-level modules.
lint: deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	bash scripts/check-file-length.sh
	python3 scripts/check-module-cycles.py

# Engine-only demo: generated telemetry ingested at full speed while another
# thread asks windowed questions, each answer checked against brute force.
# The main job: a recording (live eBPF + RocksDB when possible, else
# synthetic) replayed into loom-app, which answers the phase questions while
# data flows. About three minutes after the build.
demo: build
	BIN=$(CARGO_RELEASE_DIR) TMP_DATA_DIR=$(TMP_DATA_DIR) bash scripts/demo.sh

demo-engine: deps
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	mkdir -p $(TMP_DATA_DIR)
	$(CARGO_RELEASE_DIR)/examples/demo --seconds 12 --dir $(TMP_DATA_DIR)/demo-engine

clean-data:
	rm -rf $(TMP_DATA_DIR)

-include mk/*.mk
