# `make run` and `make test` work on a fresh machine: they create .venv, install the pinned versions of
# requirements.lock (those the committed results were made with), then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCK := requirements.lock
UV_VERSION := 0.13.9

.PHONY: install lock lock-upgrade run test test-long lint bench fuzz figures notebooks readme clean tshark-fixtures trace-memory claims verify verify-registered verify-status adopt-registered preregister fig4-sensitivity fig4-caida docs soak watch-hour counters counters-variance counters-nsqrt live-check

$(STAMP): $(LOCK) pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes -r $(LOCK)
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)  ## .venv with exactly the versions (and hashes) of requirements.lock, dpstream editable

# `make lock`: re-resolve pyproject.toml (all extras of `dev`) for Linux x86_64 / Python >= 3.11.5, keeping every
# version already pinned in the lock (a new dependency gets the newest version that fits). `make lock-upgrade`: the
# upgrade path (docs/CONTRIBUTING.md), every package at the newest version pyproject.toml allows. Then `make test test-long`
# reinstalls from the new lock and runs the tests; commit the lock if they pass.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11.5 \
	--python-platform x86_64-unknown-linux-gnu --custom-compile-command "make lock" --quiet -o $(LOCK)
$(VENV)/bin/uv:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet uv==$(UV_VERSION)

lock: $(VENV)/bin/uv
	$(UV_COMPILE)
	@echo "$(LOCK) regenerated: run 'make test test-long' (reinstalls from it), commit it if the tests pass"

lock-upgrade: $(VENV)/bin/uv
	$(UV_COMPILE) --upgrade
	@echo "$(LOCK) upgraded: run 'make test test-long' (reinstalls from it), commit it if the tests pass"

run: install  ## the default job: LazyCMS, 5 seeded trials on a Zipf stream of 2^20 items
	$(PY) run.py

lint: install  ## ruff (pyflakes, style, docstrings, complexity) over the repo, mypy over src/
	$(PY) -m ruff check .
	$(PY) -m mypy

# The suite runs on every core (pytest-xdist, one test file per worker at a time, so a file's fixtures stay in one
# process): on 2 cores from a fresh clone, 484 s against 865 s in one process, most of it numba compiling.
test: install lint  ## lint (ruff + mypy), the documentation build (a broken reference fails), the suite but `long`
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet
	$(PY) -m pytest -m "not long and not chromium" -n auto --dist loadfile

# The replay of every final registered experiment (35, up to minutes each, CPU alone) runs on every core, one
# experiment a worker at a time; the other long checks run in one process (numba's cache across processes, timings).
REPLAY := tests/harness/test_adopt.py::test_every_final_experiment_rejudged_from_the_stores_gives_looks_csv
test-long: install  ## the checks of a minute or more each (marked `long`: numba's cache across processes, serial fuzz)
	$(PY) -m pytest -m "long and not chromium" --deselect $(REPLAY)
	$(PY) -m pytest -m long -n auto --dist load $(REPLAY)

docs: install  ## the documentation site (mkdocs-material + mkdocstrings) into site/; open site/index.html
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# `make bench`: every benchmarks/*.py at its default settings (minutes; heavy_hitters.py runs the paper's trace
# length), then docs/speed.md from benchmarks/results/*.json (benchmarks/speed_page.py).
BENCHMARKS := $(filter-out benchmarks/speed_page.py benchmarks/commit_pair.py,$(wildcard benchmarks/*.py))
bench: install
	for b in $(BENCHMARKS); do echo "== $$b"; $(PY) $$b || exit 1; done
	$(PY) benchmarks/speed_page.py

# `make bench-pair OLD=<rev> [NEW_PATH=<worktree> | NEW=<rev>] [PAIR_ARGS="--repeats 11"]`: the speed rows of commit
# OLD and of this checkout's package (or NEW_PATH's src/dpstream, or commit NEW's) in one process, interleaved
# (benchmarks/commit_pair.py), into benchmarks/results/commit_pair.json (PAIR_ARGS="--out PATH" for another file),
# then docs/speed.md. Each row is pooled over PAIR_PROCESSES fresh processes (6), PAIR_PARALLEL at a time (2), each
# laying its arms out in memory differently: within one process identical code measured up to 1.95x apart
# (docs/benchmarks.md). About 17 minutes on 2 quiet cores with --repeats 11.
PAIR_PROCESSES ?= 6
PAIR_PARALLEL ?= 2
.PHONY: bench-pair
bench-pair: install
	@test -n "$(OLD)" || { echo "make bench-pair: give OLD=<git revision>, e.g. OLD=main" >&2; exit 2; }
	nice -n 10 $(PY) benchmarks/commit_pair.py --old $(OLD) $(if $(NEW_PATH),--new-path $(NEW_PATH)) $(if $(NEW),--new $(NEW)) \
		--processes $(PAIR_PROCESSES) --parallel $(PAIR_PARALLEL) $(PAIR_ARGS)
	$(PY) benchmarks/speed_page.py

fuzz: install  ## 2,000 random mutations of the bytes of every serialised class, under a 2 GB address-space limit
	OPENBLAS_NUM_THREADS=1 $(PY) tests/fuzz_serial.py --per-class 2000

# `make watch-hour`: a generated one-hour backbone trace (2.5e9 packets, captured length 96) streamed chunk by chunk
# through the streaming reader and `dpstream watch`'s epochs (deployable noise), never stored: packets/s, the ratio to
# a bare Count-Min loop of the same depth and hash family, peak memory (benchmarks/results/watch_hour.json; about
# 16 CPU minutes and 40 wall minutes on 2 busy cores; PACKETS=N for less).
PACKETS ?= 2500000000
watch-hour: install
	cd benchmarks && ../$(PY) watch.py --hour --packets $(PACKETS) --json results/watch_hour.json

# `make live-check`: the live page (`dpstream live`) rendered by headless Chromium from `dpstream watch`'s releases
# piped into it (tests/live/test_live_chromium.py, mark `chromium`); fails when Chromium is missing
# (apt-get install -y chromium). Not in make test or make test-long.
live-check: install
	$(PY) -m pytest -m chromium tests/live

soak: install  ## the default job in 50 fresh processes sharing one numba cache: runs 2-50 compile nothing
	$(PY) tests/soak.py 50

# `make counters`: the continual-counting leaderboard at full scale (T = 2^10 .. 2^24, every registered counter; its
# 2^24 cells take most of the time) and each counter's variance formula checked on 100000 independent counters at
# steps 1, 7, T/2 and T up to 2^16 (experiment counters_empirical; the plain square root, O(T) work a push, is checked
# where its work fits the budget of dpstream.trials.counters). Not CI. The leaderboard goes to the committed
# results/tables/counters.csv and results/figures/counters.png (reproduction=true), its T = 2^20 rows to the page's
# generated block (dpstream.plots.counters); the empirical check to a run folder (the committed one is T = 2^10, 2^12).
counters: install
	$(PY) run.py experiment=counters n_jobs=2 reproduction=true
	$(PY) -m dpstream.plots.counters results/tables/counters.csv docs/guide/counters.md
	$(PY) run.py experiment=counters_empirical n_jobs=2

# `make counters-variance`: every registered counter's release variance against its formula at T = 2^14 and 2^16 on
# 100000 independent counters a cell, at 1, 7, T/3, T/2, T and the steps of least and most variance
# (dpstream.counters.empirical; family-wise alpha 0.01, Bonferroni over all cells), written to
# results/tables/counters_variance.csv and its summary to docs/guide/counters.md. Hours on 2 cores (the stored
# nodes' cells push every step); a run cut short keeps the cells that finished, and the cells of one T run alone with
# CV_ARGS="--run-log2-horizons 16". Not CI.
CV_ARGS ?=
counters-variance: install
	nice -n 10 $(PY) -m dpstream.counters.empirical --log2-horizons 14 16 --counters 100000 --seed 34 \
		--out results/tables/counters_variance.csv --page docs/guide/counters.md $(CV_ARGS)

# `make counters-nsqrt`: the normalised square root's unit variances over every step at T = 2^NSQRT_LOG2_MIN ..
# 2^NSQRT_LOG2_MAX (default 17 .. 20), every row computed by blocks (dpstream.counters.root_blocks; its L is not
# Toeplitz), summarised in results/tables/nsqrt_row_norms.csv: max and its step, mean, min and its step, the value at
# T, with the commit and CPU seconds. Above T = 2^16 the leaderboard reads nsqrt's variance cells from it (empty
# without a row) and LazyHH's threshold its largest variance (refused without a row). A row is read only once its
# digest is pinned in src/dpstream/counters/normalised_rows.py (PINNED): the target prints the line to add for each
# horizon. CPU time (measured): 253 s at 2^22, 2,397 s at 2^24 (NSQRT_LOG2_MIN=24 NSQRT_LOG2_MAX=24). Not CI.
NSQRT_LOG2_MIN ?= 17
NSQRT_LOG2_MAX ?= 20
counters-nsqrt: install
	nice -n 10 $(PY) -m dpstream.counters.normalised_rows --log2-min $(NSQRT_LOG2_MIN) --log2-max $(NSQRT_LOG2_MAX) \
		--out results/tables/nsqrt_row_norms.csv

# `make figures`: every figure (results/figures/*.png), table and results/report.{md,html}, i.e. experiment=all.
# Trials already in results/store are only re-plotted (about a minute); trials MISSING from the store are COMPUTED
# AT PAPER SCALE (hours on 2 cores). Some experiments only: make figures EXPERIMENTS="fig3a svt_kstar"
# (the report is written by experiment=all only). reproduction=true sends them to the committed results/tables,
# results/figures and results/report.*; any other run writes to results/runs/<run>/ (git-ignored).
EXPERIMENTS ?= all
figures: install
	for e in $(EXPERIMENTS); do $(PY) run.py experiment=$$e n_jobs=2 reproduction=true || exit 1; done

# `make notebooks`: execute the three notebooks (jupytext percent .py files) into notebooks/*.ipynb with their
# figures and claims, redrawn from results/tables (no trial runs; DPSTREAM_RESULTS=<dir> reads another results
# folder); about 10 s each. Open them with `.venv/bin/jupyter lab notebooks/`.
notebooks: install  ## the lock holds the notebook extra; the kernels run in notebooks/: point them at this checkout's results/
	DPSTREAM_RESULTS=$${DPSTREAM_RESULTS:-$(CURDIR)/results} $(PY) -m jupytext --to notebook --execute $(wildcard notebooks/*.py)

VERDICT_PAGES := docs/reproduction/sketches.md docs/reproduction/svt.md docs/reproduction/query_release.md docs/guide/beyond.md docs/limitations.md docs/guide/sketches.md docs/verdicts.md
readme: install  ## re-render the verdict tables of the reproduction pages from results/tables/*.claims.csv
	for f in $(VERDICT_PAGES); do $(PY) -m dpstream.harness.readme --readme $$f || exit 1; done

# `make tshark-fixtures`: tshark's ip.src for every crafted valid capture (tests/capture_files.py) into
# tests/fixtures/tshark/ with its version (needs tshark: apt-get install tshark).
tshark-fixtures: install
	$(PY) tests/capture_files.py

# `make trace-memory`: peak RSS of `dpstream mechanism=lazyhh data=caida` on a generated capture of TRACE_GB GB in
# /tmp (deleted afterwards); not part of `make test` (minutes, several GB of disk).
TRACE_GB ?= 3
trace-memory: install
	$(PY) benchmarks/trace_memory.py --gigabytes $(TRACE_GB)

clean:
	rm -rf $(VENV) results/smoke .pytest_cache site

# `make claims`: re-judge every claim from the committed trial tables (results/tables/*.csv), rewrite the
# *.claims.csv and results/report.{md,html}, every comparative rule also on NULLS (default 20) permutation nulls
# of its table (about 1 CPU-minute); no trial runs. Claims adopted from the registered run (make adopt-registered)
# were decided at their looks and are left as they are.
claims: install
	$(PY) -m dpstream.harness.rejudge results --nulls $${NULLS:-20}

# `make verify`: EVERY experiment at 3 master seeds AT PAPER SCALE (about 3.5 hours a seed on one loaded core,
# docs/benchmarks.md), each seed's trials in DPSTREAM_VERIFY_STORE (default results/verify, committed: only its
# store/trials.jsonl files are tracked): an interrupted run resumes from it, on this machine or any other clone.
# Verdicts judged with 200 permutation nulls per comparative rule; a verdict that differs between the seeds is
# "inconclusive (unstable across seeds)". Writes results/tables/*.claims.csv and results/report.{md,html}.
# Smoke check (its own folder, not the committed results): make verify VERIFY_ARGS="--profile smoke --nulls 5 --out /tmp/verify-smoke"
VERIFY_ARGS ?=
verify: install
	$(PY) -m dpstream.harness.verify --seeds 0 1 2 --nulls 200 $(VERIFY_ARGS)

# `make verify-registered`: the run under results/preregistration.yaml: new master seeds from 3, added in looks (each
# look enough seeds for the registered first batch), every experiment's trials pooled over the new seeds and judged
# once a look, verdicts gated on the registered hash; resumes from DPSTREAM_VERIFY_STORE/<profile>/looks.csv and the
# seeds' stores. Paper scale takes hours: run it only after the label and structure issues have landed.
# Smoke check: make verify-registered VERIFY_ARGS="--profile smoke --nulls 0 --out /tmp/verify-smoke"
verify-registered: install
	$(PY) -m dpstream.harness.verify --registered --nulls 200 $(VERIFY_ARGS)

# `make adopt-registered`: after each batch of the registered run (its stores and looks.csv copied into
# results/verify/paper), every experiment whose registered claims are all final in looks.csv is re-judged look by look
# from the committed stores alone (no trial runs; a missing trial is an error) and must give looks.csv's records
# exactly; then its pooled table, claims (each with its look and pooled trials), figure, results/report.{md,html} and
# the pages' verdict blocks are rewritten. Minutes (200 nulls per fixed-sample rule, as the registered run).
adopt-registered: install
	$(PY) -m dpstream.harness.adopt $(ADOPT_ARGS)

# `make preregister`: regenerate results/preregistration.yaml against the current claims code (texts by declared id,
# sequential flags, capped budgets, rule hashes, the budget estimate); commit it before the first trial of seeds 3+.
preregister: install
	$(PY) -m dpstream.claims.preregister

# `make fig4-sensitivity`: for which synthetic stand-in profiles each Fig. 4 sentence holds (Zipf exponent 0.8-1.4 x
# 0, 2 or 8 sources in [t/k, 1.5 t/k)) at 2^21 packets, and one profile at the paper's 26.6 M packets. Hours on 2 cores.
fig4-sensitivity: install
	$(PY) run.py experiment=fig4_standin $(ARGS)

# `make fig4-caida TRACE=/data/trace.pcap`: Figure 4's six panels and their verdicts on a real CAIDA trace (.pcap,
# .pcapng, .csv or raw records), results in results/caida (the trace's content hash keys its trials).
fig4-caida: install
	@test -n "$(TRACE)" || { echo "TRACE=/path/to/trace.pcap is required (a CAIDA trace: see conf/data/caida.yaml)"; exit 2; }
	$(PY) run.py experiment=fig4 data=caida data.path=$(TRACE) results_dir=results/caida $(ARGS)

verify-status: install  ## per seed and experiment, the trials make verify has stored and those still to run
	$(PY) -m dpstream.harness.verify --seeds 0 1 2 --status $(VERIFY_ARGS)
