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
test: $(STAMP)
	$(PY) -m pytest --numprocesses auto --maxprocesses 4 --dist loadfile --max-worker-restart 0

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
