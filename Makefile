# wirecap: `make demo` and `make test` work on a fresh clone with Python 3.12+ and make.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench venv clean lab

venv: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || { P=$$(tools/find-python.sh) && "$$P" -m venv $(VENV); }
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) -m wirecap.demo

test: $(STAMP) lint
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check wirecap tests bench captures tools

bench: $(STAMP)
	$(PY) -m bench $(BENCH_ARGS)

# The real agent CLIs (pinned, from npm, ~1.6 GB) for real-client tests and new captures; never needed by
# demo/test (those tests skip without it), never run in CI. Installs into .lab/ (or $LAB).
lab:
	tools/install-lab.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
