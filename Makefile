# wirecap: `make demo` and `make test` work on a fresh clone with Python 3.12+ and make.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench venv clean lab bytecode

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

lint: $(STAMP)
	$(VENV)/bin/ruff check wirecap tests bench captures tools

bench: bytecode
	$(PY) -m bench $(BENCH_ARGS)

# The real agent CLIs (pinned, from npm, ~1.6 GB) for real-client tests and new captures; never needed by
# demo/test (those tests skip without it), never run in CI. Installs into .lab/ (or $LAB).
lab:
	tools/install-lab.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
