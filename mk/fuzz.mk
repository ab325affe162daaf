# Fuzzing on stable Rust: fuzz-smoke drives the body of every cargo-fuzz target
# (crates/loom/fuzz, crates/telemetry/fuzz, crates/otlp/fuzz, crates/influxql/fuzz; nightly only) with mutated samples from the real
# encoders. Included by the root Makefile (include mk/*.mk).
#
#   make fuzz-smoke [FUZZ_BUDGET_S=5] [FUZZ_MAX_INPUTS=N] [FUZZ_TARGETS=a,b] [FUZZ_SEED=S]
#
# Prints per target: inputs tried, inputs/s, panics, hangs (inputs using more
# than FUZZ_HANG_MS of CPU time; an input stuck for 10x that, at least 10 s, of
# wall-clock time ends the run), and exits non-zero on any panic or hang. Failing inputs are
# saved under $(TMP_DATA_DIR)/fuzz-smoke; replay one with
#   target/release/fuzz-smoke --replay FILE --targets NAME

FUZZ_BUDGET_S ?= 5
FUZZ_HANG_MS  ?= 2000
FUZZ_FLAGS     = --budget-s $(FUZZ_BUDGET_S) --hang-ms $(FUZZ_HANG_MS) \
                 --failures-dir $(TMP_DATA_DIR)/fuzz-smoke \
                 $(if $(FUZZ_MAX_INPUTS),--max-inputs $(FUZZ_MAX_INPUTS)) \
                 $(if $(FUZZ_TARGETS),--targets $(FUZZ_TARGETS)) \
                 $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))

.PHONY: fuzz-smoke
fuzz-smoke:
	$(CARGO_BUILD_ALL) 2>&1 | tail -n 1
	$(CARGO_RELEASE_DIR)/fuzz-smoke $(FUZZ_FLAGS)
