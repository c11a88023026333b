# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Query release: iterative construction and private equilibrium computation
# (the iterative-construction notes; Hsu, Roth, Ullman)
#
# PMW, the median mechanism, MWEM and independent Laplace answers against the Hsu-Roth-Ullman query-release game
# with analyst privacy, always beside the uniform-distribution line. The papers have no experiments; these follow the
# spec (E0, E1, E2, E3, E5, E10). Every game row reports both the accounted data-privacy eps and the analyst eps.
# Produce the rows with `python run.py experiment=<id>` (or `experiment=qr` for all of them).
#
# The figures are redrawn from the committed tables (`results/tables/<id>.csv`), so this runs in seconds;
# `make notebooks` executes it into `notebooks/<name>.ipynb`. After a smoke run (`profile=smoke`) set
# `DPSTREAM_RESULTS=results/smoke` to read those rows instead.

# %%
"""Notebook of the query-release experiments (iterative-construction notes; Hsu, Roth, Ullman)."""
import pandas as pd

from dpstream.harness.report import verdict_summary
from dpstream.harness.results import load_claims, results_dir, show_experiments

print("reading results from", results_dir())
shown = show_experiments(["qr_theory", "qr_convergence", "qr_error_vs_n", "qr_error_vs_eps", "qr_analyst_audit",
                          "qr_median_toy", "qr_alg5", "qr_alg4", "qr_error_vs_queries", "qr_error_vs_n_fair",
                          "qr_crossover"])

# %% [markdown]
# Verdicts of every claim shown above (the rules are fixed before the run; `inconclusive` when the data cannot
# decide).

# %%
claims = [c for c in map(load_claims, shown) if c is not None]
print("Verdicts:", verdict_summary(pd.concat(claims)) if claims else "no claims tables")
