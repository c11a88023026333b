# `make run` and `make test` work on a fresh machine: they create .venv, install, then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench soak figures notebooks readme clean

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

test: install lint  ## lint (ruff + mypy), then the whole test suite
	$(PY) -m pytest

# `make bench`: every benchmarks/*.py at its default settings (minutes; heavy_hitters.py runs the paper's trace
# length), then docs/speed.md from benchmarks/results/*.json (benchmarks/speed_page.py).
BENCHMARKS := $(filter-out benchmarks/speed_page.py,$(wildcard benchmarks/*.py))
bench: install
	for b in $(BENCHMARKS); do echo "== $$b"; $(PY) $$b || exit 1; done
	$(PY) benchmarks/speed_page.py

soak: install  ## the default job in 50 fresh processes sharing one numba cache: runs 2-50 compile nothing
	$(PY) tests/soak.py 50

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

readme: install  ## re-render the README's verdict tables from results/tables/*.claims.csv
	$(PY) -m dpstream.harness.readme

clean:
	rm -rf $(VENV) results/smoke .pytest_cache
