"""Estimators over a key's d row estimates: Alg. 4 of the paper, or a noise-weighted mean that drops collisions.

Both read only released values, the released cells and their analytic noise variances (a function of the public steps
and sigma): post-processing, so the sketch's privacy is unchanged.

``trimmed_mean`` (beyond the paper). A private CMS row estimate is f(x) + collisions (>= 0) + Gaussian noise, so the
min over rows (Alg. 4) is biased down by about 0.85 sigma at d = 3, while the mean of all rows carries every row's
collisions. The trimmed mean takes a reference row (the min for CMS; the median for CS, whose collisions have either
sign), keeps every row within ``TRIM_SPREAD`` standard deviations of the difference to it (rows standing further
above the min, or further from the median, hold a collision), and returns the inverse-variance weighted mean of the
rows kept. Without noise (variance 0) it keeps the rows equal to the reference: Alg. 4's answer.
"""

from __future__ import annotations

import numpy as np

ESTIMATORS = ("alg4", "trimmed_mean")
"""Estimators a sketch accepts (``estimator=``): the paper's Alg. 4 (min / median over rows), or ``trimmed_mean``."""

TRIM_SPREAD = 3.0
"""Rows kept: within TRIM_SPREAD sqrt(var_i + var_ref) of the reference row.

Chosen on trials that are not the reported ones (LazyCMS at 24 KB, d = 3, eps 0.3, Zipf 1.3, T = 2^20, root seed 7,
10 trials; ``docs/accuracy-over-time.md``): the mean ARE ratio is within 1% of its minimum over c in 0.5..6 for
every c in [2.5, 4], with the derived tree and the derived BLT alike; 3 lies inside.
"""


def trimmed_mean(rows: np.ndarray, variances: np.ndarray, signed: bool, spread: float = TRIM_SPREAD) -> np.ndarray:
    """The trimmed, inverse-variance weighted mean of each column of ``rows`` (d, n), ``variances`` (d, n) >= 0.

    A column without noise, or (CS, even d) with no row near its median, gets the reference itself (Alg. 4).
    """
    columns = np.arange(rows.shape[1])
    if signed:
        ref = np.median(rows, axis=0)
        ref_var = variances.mean(axis=0)
        keep = np.abs(rows - ref) <= spread * np.sqrt(variances + ref_var)
    else:
        low = np.argmin(rows, axis=0)
        ref, ref_var = rows[low, columns], variances[low, columns]
        keep = rows - ref <= spread * np.sqrt(variances + ref_var)
        keep[low, columns] = True
    weights = keep / np.where(variances > 0, variances, 1.0)
    total = weights.sum(axis=0)
    mean = (weights * rows).sum(axis=0) / np.where(total > 0, total, 1.0)
    return np.where((total > 0) & np.any(variances > 0, axis=0), mean, ref)
