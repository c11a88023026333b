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
# # Scalable differentially private sketches under continual observation (Holland)
#
# Figures 3 (frequency estimation on Zipf streams) and 4 (heavy hitters on packet traces), redrawn from the stored
# result rows, with 3(b) and 4(c) on real word frequencies (`wordfreq`, synthetic order), and the beyond-the-paper
# variants (derived node noise, Honaker / BLT counters, analytic calibration, multiply-shift hashing) and the
# leaderboard of continual counters. Produce them with `dpstream experiment=fig3`, `dpstream experiment=fig4`,
# `dpstream experiment=beyond` and `make counters`.
#
# The figures are redrawn from the committed tables (`results/tables/<id>.csv`), so this runs in seconds;
# `make notebooks` executes it into `notebooks/<name>.ipynb`. After a smoke run (`profile=smoke`) set
# `DPSTREAM_RESULTS=results/smoke` to read those rows instead.

# %%
"""Notebook of the sketch experiments (Figures 3 and 4, Holland); the markdown cells explain each figure."""
import pandas as pd

from dpstream.harness.report import verdict_summary
from dpstream.harness.results import load_claims, results_dir, show_experiments

print("reading results from", results_dir())
shown = show_experiments(["fig3a", "fig3a_speedup", "fig3b", "fig3c", "fig3d", "fig3e", "fig3f", "fig3b_wordfreq",
                          "fig4a", "fig4b", "fig4c", "fig4d", "fig4e", "fig4f", "fig4_k256", "fig4c_wordfreq",
                          "fig4_sensitivity", "fig4_sensitivity_eps", "fig4_sensitivity_full",
                          "beyond_memory", "beyond_eps", "beyond_hh", "counters", "counters_empirical"])

# %% [markdown]
# Verdicts of every claim shown above (the rules are fixed before the run; `inconclusive` when the data cannot
# decide).

# %%
claims = [c for c in map(load_claims, shown) if c is not None]
print("Verdicts:", verdict_summary(pd.concat(claims)) if claims else "no claims tables")
