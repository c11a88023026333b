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
# # Query release: iterative construction and private equilibrium computation (seeds 002 and 003)
#
# PMW, the median mechanism, MWEM and independent Laplace answers against the Hsu-Roth-Ullman query-release game
# with analyst privacy, always beside the uniform-distribution line. The papers have no experiments; these follow the
# spec (E0, E1, E2, E3, E5, E10). Every game row reports both the accounted data-privacy eps and the analyst eps.
# Produce the rows with `python run.py experiment=<id>` (add `profile=smoke` for a quick look).

# %%
from dpstream.harness.results import results_dir, show_experiments

print("reading results from", results_dir())
shown = show_experiments(["qr_theory", "qr_convergence", "qr_error_vs_n", "qr_error_vs_eps", "qr_analyst_audit",
                          "qr_median_toy"])
