"""A tiny trial family for harness tests: seeded draws, optionally slow, optionally uncertified."""

import time

import numpy as np


def run_trial(params, seed):
    rng = np.random.default_rng(seed)
    time.sleep(params["mechanism"].get("sleep", 0.0))
    out = {"value": float(rng.normal()) + params["epsilon"], "elapsed_s": 0.0}
    if params["mechanism"].get("uncertified"):
        out["certified"] = False
    return out
