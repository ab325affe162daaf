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

build: deps
	cargo build --release --workspace --bins --examples

# The test command CI runs (.ci/run). Release mode: the property, crash and
# end-to-end tests ingest millions of records.
test: deps
	cargo build --release --workspace --bins --examples 2>&1 | tail -n 3
	cargo test --release --workspace --no-fail-fast
	$(MAKE) --no-print-directory fuzz-smoke FUZZ_BUDGET_S=3
	$(MAKE) --no-print-directory figures-test
	$(MAKE) --no-print-directory deploy-check

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# Engine-only demo: generated telemetry ingested at full speed while another
# thread asks windowed questions, each answer checked against brute force.
# The main job: a recording (live eBPF + RocksDB when possible, else
# synthetic) replayed into loom-app, which answers the phase questions while
# data flows. About three minutes after the build.
demo: build
	BIN=$(CARGO_RELEASE_DIR) TMP_DATA_DIR=$(TMP_DATA_DIR) bash scripts/demo.sh

demo-engine: deps
	cargo build --release -p loom --example demo
	mkdir -p $(TMP_DATA_DIR)
	$(CARGO_RELEASE_DIR)/examples/demo --seconds 12 --dir $(TMP_DATA_DIR)/demo-engine

clean-data:
	rm -rf $(TMP_DATA_DIR)

-include mk/*.mk
