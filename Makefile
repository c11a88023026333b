# `make run` and `make test` work on a fresh machine: they create .venv, install, then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint docs bench figures notebooks readme clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install  ## the default job: LazyCMS, 5 seeded trials on a Zipf stream of 2^20 items
	$(PY) run.py

lint: install  ## ruff (pyflakes, style, docstrings, complexity) over the repo, mypy over src/
	$(PY) -m ruff check .
	$(PY) -m mypy

test: install lint  ## lint (ruff + mypy), the documentation build (a broken reference fails), the whole test suite
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet
	$(PY) -m pytest

docs: install  ## the documentation site (mkdocs-material + mkdocstrings) into site/; open site/index.html
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

bench: install
	$(PY) benchmarks/throughput.py

# `make figures`: every figure (results/figures/*.png), table and results/report.{md,html}, i.e. experiment=all.
# Trials already in results/store are only re-plotted (about a minute); trials MISSING from the store are COMPUTED
# AT PAPER SCALE (hours on 2 cores). Some experiments only: make figures EXPERIMENTS="fig3a svt_kstar"
# (the report is written by experiment=all only).
EXPERIMENTS ?= all
figures: install
	for e in $(EXPERIMENTS); do $(PY) run.py experiment=$$e n_jobs=2 || exit 1; done

# `make notebooks`: execute the three notebooks (jupytext percent .py files) into notebooks/*.ipynb with their
# figures and claims, redrawn from results/tables (no trial runs; DPSTREAM_RESULTS=<dir> reads another results
# folder); about 10 s each. Open them with `.venv/bin/jupyter lab notebooks/`.
NOTEBOOK_STAMP := $(VENV)/.installed-notebook
$(NOTEBOOK_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,notebook]'
	touch $(NOTEBOOK_STAMP)

notebooks: $(NOTEBOOK_STAMP)  ## the kernels run in notebooks/: point them at this checkout's results/
	DPSTREAM_RESULTS=$${DPSTREAM_RESULTS:-$(CURDIR)/results} $(PY) -m jupytext --to notebook --execute $(wildcard notebooks/*.py)

VERDICT_PAGES := docs/reproduction/sketches.md docs/reproduction/svt.md docs/reproduction/query_release.md docs/guide/beyond.md
readme: install  ## re-render the verdict tables of the reproduction pages from results/tables/*.claims.csv
	for f in $(VERDICT_PAGES); do $(PY) -m dpstream.harness.readme --readme $$f || exit 1; done

clean:
	rm -rf $(VENV) results/smoke .pytest_cache site
