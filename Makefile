PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: run test lint bench clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or: make PYTHON=python3)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP_RUN): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[server]'
	@touch $@

$(STAMP_DEV): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[dev,e5]'  # e5: the gate's semantic layer is tested too
	@touch $@ $(STAMP_RUN)

run: $(STAMP_RUN)
	$(BIN)/memwarden quickstart

test: $(STAMP_DEV)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/python -m pytest

lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests benchmarks examples

bench: $(STAMP_DEV)
	$(BIN)/pip install -q -e '.[dev,bench]'
	$(BIN)/python benchmarks/bench_store.py
	$(BIN)/python benchmarks/bench_gate.py
	$(BIN)/python benchmarks/bench_taint.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .ruff_cache
