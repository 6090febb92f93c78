# Two commands on a fresh machine: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
ROOMS := actors tools models telemetry hierarchy journal config cli serve
TYPED := $(addprefix .typecheck/regiment/,$(wildcard *.py)) $(addprefix .typecheck/regiment/,$(ROOMS)) tests examples bench

.PHONY: demo test check bench clean tracing-doc

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,cli]'
	touch $(STAMP)

# mypy cannot follow the editable-install import hook; a git-ignored symlink
# .typecheck/regiment -> .. lets it see the repository root as the package.
.typecheck/regiment:
	mkdir -p .typecheck
	ln -sfn .. .typecheck/regiment

demo: $(STAMP)
	$(PY) examples/refund/main.py

# --max-worker-restart 0: a worker that dies fails the test it was running, by name; with
# restarts, our load-by-file scheduler (tests/conftest.py) hung waiting on the new worker.
# Three workers on 2 cores: much of the suite waits (Ray restarting replicas, leases running
# out, servers starting), so a third worker fills idle CPU; a quiet full run at 3 used 138 %
# of the 2 cores. The Ray tests are two units (tests/conftest.py), each with its own Ray.
TEST_WORKERS ?= 3
test: $(STAMP)
	$(PY) -m pytest --numprocesses $(TEST_WORKERS) --dist loadfile --max-worker-restart 0

# mypy --num-workers auto: CI's clone starts with no cache, so mypy checks ~8,800 modules
# (the SDKs' types: anthropic, openai, ray), in a process per core.
check: $(STAMP) .typecheck/regiment
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --num-workers auto $(TYPED)

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .typecheck .mypy_cache .ruff_cache .pytest_cache

# docs/tracing.md is generated from telemetry/_catalogue.py (a test fails when they differ).
tracing-doc: $(STAMP)
	$(PY) -m regiment.telemetry._catalogue docs/tracing.md
