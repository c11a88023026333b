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
# # Scalable differentially private sketches under continual observation (seed 004)
#
# Figures 3 (frequency estimation on Zipf streams) and 4 (heavy hitters on packet traces), redrawn from the stored
# result rows. Produce them with `python run.py experiment=fig3` and `python run.py experiment=fig4`
# (add `profile=smoke` for a quick look). Set `DPSTREAM_RESULTS` to read another results folder.

# %%
from dpstream.harness.results import results_dir, show_experiments

print("reading results from", results_dir())
shown = show_experiments(["fig3a", "fig3b", "fig3c", "fig3d", "fig3e", "fig3f",
                          "fig4a", "fig4b", "fig4c", "fig4d", "fig4e", "fig4f"])
