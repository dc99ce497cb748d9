# warpwise: the two front-door commands are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test lint format bench clean help

help:
	@echo "make run    - set up a virtual environment and run 'warpwise check examples/'"
	@echo "make test   - install test dependencies, lint (ruff + mypy) and run the test suite"
	@echo "make bench  - run the CPU benchmarks in bench/ and write results under bench/results/"

$(STAMP): pyproject.toml
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,compile]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# `warpwise check` exits 1 when it reports findings; that is the expected outcome on the examples.
run: $(STAMP)
	$(BIN)/warpwise check examples/ || [ $$? -eq 1 ]

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/analyze_latency.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
