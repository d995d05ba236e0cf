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

# One sync of sample-repo into the embedded store (./.gitkrm), waiting until every object is
# Current (the bundled controllers run meanwhile), then its status. The command
# ends (a quickstart check can run it); the long-lived agent is the last command it prints.
run: install
	$(BIN)/gitkrm validate sample-repo
	$(BIN)/gitkrm run --repo sample-repo --state .gitkrm --once --wait --timeout 120s
	$(BIN)/gitkrm status --state .gitkrm
	@echo
	@echo "sample-repo is synced into .gitkrm/store.db. Look at it:"
	@echo "  $(BIN)/gitkrm get deployments -A"
	@echo "  $(BIN)/gitkrm get queues -n worker"
	@echo "Run the agent for good (Ctrl-C stops it); edits under sample-repo are synced at once:"
	@echo "  $(BIN)/gitkrm run --repo sample-repo --interval 30s"
	@echo "and, from another terminal, kubectl against its API:"
	@echo "  kubectl --kubeconfig .gitkrm/kubeconfig get gitsources,deployments -A"

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
