# `make run` and `make test` work on a fresh machine: they create .venv, install, then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench figures readme clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install  ## the default job: LazyCMS, 5 seeded trials on a Zipf stream of 2^20 items
	$(PY) run.py

lint: install
	$(PY) -m ruff check .

test: install lint  ## lint, then the whole test suite
	$(PY) -m pytest

bench: install
	$(PY) benchmarks/throughput.py

figures: install  ## every paper figure at paper scale
	$(PY) run.py experiment=fig3 n_jobs=2

readme: install  ## re-render the README's verdict tables from results/tables/*.claims.csv
	$(PY) -m dpstream.harness.readme

clean:
	rm -rf $(VENV) results/smoke .pytest_cache
