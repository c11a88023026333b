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
# # The sparse vector technique, revisited (seeds 000 and 001)
#
# AboveThreshold, Sparse and NumericSparse against ThresholdMonitor, whose error depends on k* (how many heavy
# queries one record is in) instead of c (how many heavy queries there are). The paper has no experiments; these
# follow the spec's "atoms" design. Produce the rows with `python run.py experiment=<id>` (add `profile=smoke`
# for a quick look). Set `DPSTREAM_RESULTS` to read another results folder.

# %%
from dpstream.harness.results import results_dir, show_experiments

print("reading results from", results_dir())
shown = show_experiments(["svt_theory", "svt_c", "svt_kstar", "svt_kcap", "svt_order", "shifting_hh", "audit_svt",
                           "audit_power"])
