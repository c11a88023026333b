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
# # The sparse vector technique, revisited (Kaplan, Mansour, Stemmer and the SVT notes)
#
# AboveThreshold, Sparse and NumericSparse against ThresholdMonitor, whose error depends on k* (how many heavy
# queries one record is in) instead of c (how many heavy queries there are). The paper has no experiments; these
# follow the spec's "atoms" design. Produce the rows with `python run.py experiment=<id>` (or `experiment=svt`).
#
# The figures are redrawn from the committed tables (`results/tables/<id>.csv`), so this runs in seconds;
# `make notebooks` executes it into `notebooks/<name>.ipynb`. After a smoke run (`profile=smoke`) set
# `DPSTREAM_RESULTS=results/smoke` to read those rows instead.

# %%
"""Notebook of the sparse vector experiments (Kaplan, Mansour, Stemmer; the SVT notes), explained in markdown."""
import pandas as pd

from dpstream.harness.report import verdict_summary
from dpstream.harness.results import load_claims, results_dir, show_experiments

print("reading results from", results_dir())
shown = show_experiments(["svt_theory", "svt_c", "svt_kstar", "svt_kcap", "svt_order", "shifting_hh", "svt_kappa",
                          "audit_svt", "audit_power"])

# %% [markdown]
# Verdicts of every claim shown above (the rules are fixed before the run; `inconclusive` when the data cannot
# decide).

# %%
claims = [c for c in map(load_claims, shown) if c is not None]
print("Verdicts:", verdict_summary(pd.concat(claims)) if claims else "no claims tables")
