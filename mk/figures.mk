# Figures (10-16 of docs/design.md): parse evaluation-output/* into figures/data/*.csv and
# draw figures/figures/*.png and .pdf. Included by the root Makefile (-include mk/*.mk).
#
#   make figures-deps    venv at figures/.venv with the pinned figures/requirements.txt
#   make figures         draw every figure that has logs; one line per figure says
#                        what was drawn, or why it was skipped and which target makes the logs
#   make figures-test    parser tests and fixture tests (pytest) in the venv
#   make figures-clean   remove figures/data and figures/figures
#
# Variables: FIGURES_LOGS (log folder, default evaluation-output/), FIGURES_OUT
# (output root, default figures/), FIGURES_PYTHON (interpreter that makes the venv).

FIGURES_PYTHON ?= python3
FIGURES_VENV   := figures/.venv
FIGURES_LOGS   ?= $(or $(EVAL_OUT),evaluation-output)
FIGURES_OUT    ?= figures
FIGURES_STAMP  := $(FIGURES_VENV)/.installed

.PHONY: figures figures-deps figures-test figures-clean

figures-deps: $(FIGURES_STAMP)

# Reinstalled when requirements.txt changes.
$(FIGURES_STAMP): figures/requirements.txt
	@test -x $(FIGURES_VENV)/bin/python || $(FIGURES_PYTHON) -m venv $(FIGURES_VENV) || \
		{ echo "figures-deps: '$(FIGURES_PYTHON) -m venv' failed (Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }
	$(FIGURES_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r figures/requirements.txt
	@touch $@

figures: figures-deps
	$(FIGURES_VENV)/bin/python figures/make_figures.py --logs $(FIGURES_LOGS) --out $(FIGURES_OUT)

# Parser unit tests, and parsing, truncation and drawing tests on the logs the
# apps wrote (figures/tests/fixtures/).
figures-test: figures-deps
	$(FIGURES_VENV)/bin/python -m pytest -q -p no:cacheprovider figures/test_parse.py figures/tests

figures-clean:
	rm -rf figures/data figures/figures
