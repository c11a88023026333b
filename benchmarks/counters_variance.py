"""Mean noise variance of the prefix-sum counters per unit calibration factor, and the BLT optimisation time.

All counters share kappa = sqrt(m) sqrt(2 ln(1.25/delta)) / epsilon; the mean over steps s = 1..T of Var(s) / kappa^2:
  binary tree  h * mean popcount(s)             (sigma^2 = h kappa^2, h = ceil(log2(T + 1)))
  Honaker      h * mean sum_{l in bits(s)} v_l  (same sigma, v_l = 2^l / (2^(l+1) - 1))
  BLT(k)       column_norm^2 * mean ||row s of A C^-1||^2   (sigma^2 = column_norm^2 kappa^2)
  sqrt-Toeplitz  C = A^(1/2), coefficients of (1 - x)^(-1/2): a reference with O(T) state, not a counter we offer.

    python benchmarks/counters_variance.py [--json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from dpstream.counters.blt_params import column_norm, mean_noise_variance, optimal_blt
from dpstream.counters.gauss_bm import popcount
from dpstream.counters.honaker_tree import honaker_variance
from dpstream.privacy.calibration import gauss_bm_levels

HORIZONS = (2**10, 2**14, 2**17, 2**20)
BUFFERS = (3, 4, 5)


def sqrt_toeplitz_mean_variance(horizon: int) -> float:
    """Square-root factorisation C = B = A^(1/2).

    Both Toeplitz with c_t = binom(2t, t) / 4^t; sens^2 = sum c^2, Var(s) = sum_{t < s} c_t^2.
    """
    t = np.arange(1, horizon)
    c = np.concatenate([[1.0], np.cumprod((2 * t - 1) / (2 * t))])
    sq = c**2
    return float(sq.sum() * np.cumsum(sq).mean())


def row(horizon: int) -> dict:
    """Mean noise variance per unit sigma^2 x sensitivity^2 of every counter at ``horizon``."""
    h = gauss_bm_levels(horizon)
    s = np.arange(1, horizon + 1)
    out = {"horizon": horizon, "binary": h * float(popcount(s).mean()),
           "honaker": h * float(honaker_variance(s, h).mean()), "sqrt_toeplitz": sqrt_toeplitz_mean_variance(horizon)}
    for k in BUFFERS:
        params = optimal_blt(horizon, k)
        out[f"blt{k}"] = column_norm(params) ** 2 * mean_noise_variance(params)
        out[f"blt{k}_opt_s"] = params.optimisation_seconds
    return out


def main() -> None:
    """Print the table (or JSON) over ``HORIZONS``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    args = parser.parse_args()
    rows = [row(horizon) for horizon in HORIZONS]
    if args.json:
        print(json.dumps(rows))
        return
    names = ["binary", "honaker", *(f"blt{k}" for k in BUFFERS), "sqrt_toeplitz"]
    print("mean Var(s) / kappa^2 (ratio to binary)")
    ks = ",".join(map(str, BUFFERS))
    print(f"{'T':>8} " + " ".join(f"{n:>17}" for n in names) + f"   BLT optimisation CPU s (k={ks})")
    for r in rows:
        cells = " ".join(f"{r[n]:>8.2f} ({r[n] / r['binary']:.3f})" for n in names)
        times = ", ".join(f"{r[f'blt{k}_opt_s']:.2f}" for k in BUFFERS)
        print(f"2^{int(np.log2(r['horizon'])):<6} {cells}   {times}")


if __name__ == "__main__":
    main()
