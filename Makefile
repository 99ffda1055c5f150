# wirecap: `make demo` and `make test` work on a fresh clone with Python 3.12+ and make.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench venv clean lab bytecode realclient

venv: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || { P=$$(tools/find-python.sh) && "$$P" -m venv $(VENV); }
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# Bytecode for wirecap's own modules, as a wheel install would have: Python still reads it when
# PYTHONDONTWRITEBYTECODE is set, and a stale file is ignored (recompiled in memory), never wrong.
# Without it every command compiles its modules first (~0.1 s each start, counted by the benchmarks).
bytecode: $(STAMP)
	@$(PY) -m compileall -q wirecap

demo: bytecode
	$(PY) -m wirecap.demo

test: bytecode lint
	$(PY) -m pytest -q

# ruff, then the shape gates of issue 15: cyclomatic complexity (radon, tools/complexity.py) and the type
# checker on the sans-I/O core (mypy; which folders is in pyproject.toml's [tool.mypy]).
lint: $(STAMP)
	$(VENV)/bin/ruff check wirecap tests bench captures tools
	$(PY) tools/complexity.py
	$(VENV)/bin/mypy

bench: bytecode
	$(PY) -m bench $(BENCH_ARGS)

# The real agent CLIs (pinned, from npm, ~1.6 GB) for real-client tests and new captures; never needed by
# demo/test (those tests skip without it). Installs into .lab/ (or $LAB); .ci/run installs it into a cache
# outside the clone and points WIRECAP_LAB at it, so `make test` there includes the real-client suite.
lab:
	tools/install-lab.sh

# The real-client suite alone: each lab client x case recorded, then replayed strictly to the same client
# (tests/integration/test_realclient_suite.py; needs the lab and root for `unshare -n`, else it skips). Prints the table.
realclient: bytecode
	$(PY) -m pytest -q tests/integration/test_realclient_suite.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
