"""Paper claims as decision rules fixed before the run (one module per family; shared vocabulary in ``core``)."""

from dpstream.claims.core import (
    MIN_TRIALS,
    VERDICTS,
    Claim,
    all_points,
    bootstrap_mean_ci,
    fmt_series,
    mean_below,
    monotone_trend,
    paired_difference_ci,
    point_means,
    verdict_of,
)

__all__ = [
    "MIN_TRIALS",
    "VERDICTS",
    "Claim",
    "all_points",
    "bootstrap_mean_ci",
    "fmt_series",
    "mean_below",
    "monotone_trend",
    "paired_difference_ci",
    "point_means",
    "verdict_of",
]
