# The whole evaluation, one command: scripts/evaluate.py runs every experiment
# family of mk/*.mk in turn (starting and stopping every process itself), then
# `make figures`, and prints a summary: which figures have data, and the key
# numbers measured here next to the published ones. Needs root (eBPF probes,
# the probe-effect ramdisk). Included by the root Makefile.
#
#   make evaluate-small                    # reduced scale, about 55 min on a 2-core machine
#   make evaluate                          # the same recipe at the published scale (many hours)
#   make evaluate-small EVAL_SCALE=tiny    # a smoke run of every step, about 15 min
#   make evaluate-small EVAL_STEPS=is,ab   # only some step families (names: evaluate.py --help)
#   make evaluate-summary                  # the summary table again, from the existing logs
#   make evaluate-plan [EVAL_SCALE=...]    # the steps and their expected times, nothing run
#
# Every scale knob below is a variable: the value used at `small` scale, with the
# `tiny` and published (`full`, used by `make evaluate`) values beside it.
# Command-line values win over the scale's, e.g. `make evaluate-small EVAL_PE_ROUNDS=7`.
# Logs go to EVAL_OUT (evaluation-output/), the driver's own lines to
# EVAL_OUT/evaluate.log, the run's settings to EVAL_OUT/evaluate-run.json (read by
# the figure captions).

EVAL_SCALE ?= small

ifeq ($(EVAL_SCALE),tiny)
EVAL_RECORD_S ?= 8
EVAL_RECORD_WARMUP_S ?= 3
EVAL_QUERY_INTERVAL_S ?= 8
EVAL_QUERY_COUNT ?= 2
EVAL_COMPLETE_REPLAY_S ?= 20
EVAL_PE_ROUNDS ?= 2
EVAL_PE_DURATION_S ?= 5
EVAL_PE_WARMUP_S ?= 2
EVAL_VALKEY_PE_ROUNDS ?= 1
EVAL_VALKEY_PE_S ?= 5
EVAL_IS_RUNS ?= 1
EVAL_IS_DURATION_S ?= 1
EVAL_DD_MB ?= 1024
EVAL_AB_LOOKBACKS ?= 20 60
EVAL_AB_SPEED ?= 10
EVAL_AB_REPS ?= 1
endif
ifeq ($(EVAL_SCALE),full)
EVAL_RECORD_S ?= 120
EVAL_RECORD_WARMUP_S ?= 15
EVAL_QUERY_INTERVAL_S ?= 120
EVAL_QUERY_COUNT ?= 5
EVAL_COMPLETE_REPLAY_S ?= 800
EVAL_PE_ROUNDS ?= 5
EVAL_PE_DURATION_S ?= 120
EVAL_PE_WARMUP_S ?= 15
EVAL_VALKEY_PE_ROUNDS ?= 3
EVAL_VALKEY_PE_S ?= 60
EVAL_IS_RUNS ?= 5
EVAL_IS_DURATION_S ?= 120
EVAL_DD_MB ?= 16384
EVAL_AB_LOOKBACKS ?= 20 60 120 300 600
EVAL_AB_SPEED ?= 1
EVAL_AB_REPS ?= 5
endif

# small (tiny / full=published)
EVAL_RECORD_S ?= 30            # live recording per phase, s (8 / 120; the paper replayed recordings of its own runs)
EVAL_RECORD_WARMUP_S ?= 5      # workload warmup before recording, s (3 / 15)
EVAL_QUERY_INTERVAL_S ?= 30    # end to end: s between the repeated queries (8 / 120)
EVAL_QUERY_COUNT ?= 3          # end to end: query rounds; replay = interval x rounds + 5 s (2 / 5)
EVAL_COMPLETE_REPLAY_S ?= 80   # Influx-complete: s of replay before the backlog is written and asked (20 / 800)
EVAL_PE_ROUNDS ?= 5            # probe effect: rounds of noop/file/Loom/InfluxDB alternated (2 / 5; paper: 1 run each)
EVAL_PE_DURATION_S ?= 12       # probe effect: measured s per run (5 / 120)
EVAL_PE_WARMUP_S ?= 5          # probe effect: warmup s per run (2 / 15)
EVAL_VALKEY_PE_ROUNDS ?= 2     # Valkey probe cost: rounds of none/syscalls/both (1 / 3; not in the paper)
EVAL_VALKEY_PE_S ?= 10         # Valkey probe cost: measured s per run (5 / 60)
EVAL_IS_RUNS ?= 1              # ingest scaling: runs per store and size (1 / 5)
EVAL_IS_DURATION_S ?= 4        # ingest scaling: s per run (1 / 120)
EVAL_IS_SIZES ?= 8 64 256 1024 # ingest scaling: record sizes, B (same at every scale)
EVAL_DD_MB ?= 4096             # dd direct-I/O reference, MiB written (1024 / 16384)
EVAL_AB_LOOKBACKS ?= 20 60 120 300 600  # ablation lookbacks, s (20 60 / 20 60 120 300 600)
EVAL_AB_SPEED ?= 10            # ablation: replay pace multiplier of the P2 data, event time stored (10 / 1)
EVAL_AB_MAX_RATE ?= 3000000    # ablation: records/s the replay may reach; the speed is lowered to stay under
                               # (event time, 500 ms reorder: 0 dropped at 3.1 M/s for 40 s, loom-app 0.37 cores)
EVAL_AB_REPS ?= 2              # ablation: repetitions of each query after the cut-off (1 / 5)
EVAL_WORKLOADS ?= rocksdb valkey
EVAL_PHASES ?= p1 p2 p3
EVAL_STEPS ?= all              # comma-separated step families, or all
EVAL_SYNTHETIC_FALLBACK ?= 1   # a live recording that fails is replaced by a SYNTHETIC one (replay gen), reported
EVAL_PYTHON ?= python3

EVAL_KNOBS := EVAL_SCALE EVAL_RECORD_S EVAL_RECORD_WARMUP_S EVAL_QUERY_INTERVAL_S EVAL_QUERY_COUNT \
	EVAL_COMPLETE_REPLAY_S EVAL_PE_ROUNDS EVAL_PE_DURATION_S EVAL_PE_WARMUP_S EVAL_VALKEY_PE_ROUNDS \
	EVAL_VALKEY_PE_S EVAL_IS_RUNS EVAL_IS_DURATION_S EVAL_IS_SIZES EVAL_DD_MB EVAL_AB_LOOKBACKS \
	EVAL_AB_SPEED EVAL_AB_MAX_RATE EVAL_AB_REPS EVAL_WORKLOADS EVAL_PHASES EVAL_STEPS EVAL_SYNTHETIC_FALLBACK EVAL_OUT TMP_DATA_DIR RECORDING_DIR FIGURES_OUT
EVAL_ENV = $(foreach k,$(EVAL_KNOBS),$(k)="$(strip $($(k)))")

.PHONY: evaluate evaluate-small evaluate-summary evaluate-plan

evaluate-small:
	@$(EVAL_ENV) $(EVAL_PYTHON) scripts/evaluate.py run

evaluate:
	$(MAKE) --no-print-directory evaluate-small EVAL_SCALE=full

evaluate-summary:
	@$(EVAL_ENV) $(EVAL_PYTHON) scripts/evaluate.py summary

evaluate-plan:
	@$(EVAL_ENV) $(EVAL_PYTHON) scripts/evaluate.py plan
