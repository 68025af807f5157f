# Every target creates and reuses .venv by itself, so a fresh clone needs only `make validate` / `make test`.
# PYTHON and VENV may be set on the command line: CI also runs `make test PYTHON=/usr/bin/python3 VENV=.venv-system`
# (Debian 12's own Python 3.11.2, the oldest one supported).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP_LOG := $(VENV)/pip-install.log
GPUPOLICY := $(BIN)/gpupolicy

.PHONY: validate test lint docs docs-check bench bench-simulate system-tools clean

# pip stays quiet (its full log goes to $(PIP_LOG)); each step says what it does, so a first run is never silent.
$(STAMP): pyproject.toml
	@echo "gpupolicy setup: $(VENV) for $$($(PYTHON) --version 2>&1) ($(PYTHON)); a first run takes about a minute"
	@test -x $(BIN)/python || { echo "  [1/3] creating the virtual environment $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "  [2/3] upgrading pip"
	@$(BIN)/python -m pip install --quiet --log $(PIP_LOG) --upgrade pip
	@echo "  [3/3] installing gpupolicy and its dependencies (kubectl, jsonschema-rs, mkdocs-material, playwright ...); log: $(PIP_LOG)"
	@$(BIN)/python -m pip install --quiet --log $(PIP_LOG) -e '.[test]'
	@touch $(STAMP)
	@echo "gpupolicy setup: done ($(GPUPOLICY))"

validate: $(STAMP)  ## the main job: render, load, schema-check and rule-check the whole repository
	$(GPUPOLICY) validate

test: $(STAMP)  ## the test suite
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check tools tests bench
	$(BIN)/ruff format --check tools tests bench

bench: $(STAMP)  ## fleet-scale benchmark: prints a table, writes bench/results.json (~9 min; QUICK=1 for ~2 min)
	$(BIN)/python bench/run.py $(if $(QUICK),--quick,)

bench-simulate: $(STAMP)  ## simulator events/s (openb, ITP, mixed) -> bench/results-simulate.json; RECOMMEND=1: recommend's candidates/s, pool vs Ray
	$(BIN)/python bench/bench_simulate.py $(if $(RECOMMEND),--recommend,)

docs: $(STAMP)  ## regenerate the fleet pages, then build the runbook site strictly into site/ (Mermaid: make system-tools)
	$(GPUPOLICY) docs
	$(BIN)/python -P -m gpupolicy.infra.sitetrust .  # refuses a mkdocs.yml that would run code not the toolkit's (SEC011)
	NO_MKDOCS_2_WARNING=1 PYTHONSAFEPATH=1 $(BIN)/mkdocs build --strict --site-dir site

docs-check: $(STAMP)  ## fail when a generated page is stale
	$(GPUPOLICY) docs --check

# --- pull requests (docs/operations/pull-requests.md) ---
BASE ?=
DIFF_FORMAT ?= markdown
DIFF_OUTPUT ?= artifacts/diff.md

.PHONY: diff sarif junit

diff: $(STAMP)  ## what the change does (BASE=rev, default: merge base with main) -> artifacts/diff.md
	mkdir -p artifacts
	$(GPUPOLICY) diff $(if $(BASE),--base $(BASE)) --format $(DIFF_FORMAT) $(if $(filter-out -,$(DIFF_OUTPUT)),--output $(DIFF_OUTPUT))

# Exit 1 (error findings, all in the report) does not fail these targets; exit 2 (the tool could not do its
# whole job: a crashed check, a usage error) does, though the report is still written when there is one to
# write (a crash is an INTERNAL finding in it). The old report goes first so a failed run never leaves a
# stale one behind to be uploaded, and a "successful" run must have written one.
sarif: $(STAMP)  ## findings as SARIF 2.1.0 -> artifacts/gpupolicy.sarif (findings do not fail this target)
	$(call report,sarif,artifacts/gpupolicy.sarif)

junit: $(STAMP)  ## findings as JUnit XML -> artifacts/gpupolicy-junit.xml (findings do not fail this target)
	$(call report,junit,artifacts/gpupolicy-junit.xml)

define report
	mkdir -p $(dir $(2))
	rm -f $(2)
	$(GPUPOLICY) validate --format $(1) --output $(2) || test $$? -eq 1
	test -s $(2)
endef

# System tools that some tests need (promtool, Chromium); CI calls this, developers may.
system-tools:
	bash .ci/system-tools

clean:
	rm -rf $(VENV) .venv-system site .pytest_cache
