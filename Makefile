# The two commands of the README: `make quickstart` (the main job) and `make test`.
# Each creates .venv when missing and installs the project into it first.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: quickstart test bench install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

quickstart: $(STAMP)
	$(BIN)/syntaxlm quickstart --out runs/quickstart

test: $(STAMP)
	$(BIN)/python -m pytest -n auto -q

bench: $(STAMP)
	$(BIN)/python bench/read_bench.py
	$(BIN)/python bench/structure_bench.py
	$(BIN)/python bench/train_bench.py

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
