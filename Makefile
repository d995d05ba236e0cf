# The two quickstart commands of the README are `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install run test lint bench clean

$(BIN)/gitkrm: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

install: $(BIN)/gitkrm

run: install
	$(BIN)/gitkrm validate sample-repo

lint: install
	$(BIN)/ruff check gitkrm tests benchmarks
	$(BIN)/ruff format --check gitkrm tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest -n 2 -p no:cacheprovider

bench: install
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
