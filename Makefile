# The two quickstart commands of the README are `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# Every dependency, with hashes, as `make lock` resolved it from pyproject.toml (uv pip compile):
# a fresh machine installs exactly the versions the suite was proven with.
LOCK := requirements.lock

.PHONY: install run test lint bench clean lock test-latest fuzz

$(BIN)/gitkrm: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python -m compileall -q gitkrm >/dev/null  # as an installed wheel: no compile at start
	$(BIN)/python -m pip check -q >/dev/null || { $(BIN)/python -m pip check; \
	  echo "$(LOCK) does not match pyproject.toml: run make lock"; exit 1; }
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

# The fuzz targets of tests/fuzz, long: FUZZ_EXAMPLES examples each (20,000 unless set; the
# normal suite runs 100), with Hypothesis' statistics (examples run, time per example).
fuzz: install
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests/fuzz -p no:cacheprovider \
	  --hypothesis-show-statistics

# Resolve pyproject.toml (every extra, helm included through dev, plus the build backend)
# into the lock file again.
lock: install
	printf 'setuptools>=68\n' | $(BIN)/uv pip compile pyproject.toml - --extra dev --extra helm \
	  --generate-hashes --python-version 3.11 --quiet -o $(LOCK)

# The suite against the newest versions pyproject.toml allows (no lock), in its own venv.
test-latest:
	$(PYTHON) -m venv $(VENV)-latest
	$(VENV)-latest/bin/python -m pip install -q --upgrade pip
	$(VENV)-latest/bin/python -m pip install -q --upgrade -e '.[dev]'
	$(VENV)-latest/bin/python -m pytest -n 2 -p no:cacheprovider

bench: install
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(VENV)-latest .mypy_cache .ruff_cache .pytest_cache
