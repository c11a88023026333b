"""Paper claims as decision rules fixed before the run (one module per family; shared vocabulary in ``core``)."""

from dpstream.claims.core import (
    MIN_TRIALS,
    VERDICTS,
    Claim,
    all_points,
    flat_claim,
    flat_within,
    fmt_series,
    mean_below,
    mean_ci,
    mean_within,
    monotone_trend,
    paired_difference_ci,
    point_means,
    trend_claim,
    trial_values,
    verdict_of,
)

__all__ = [
    "MIN_TRIALS",
    "VERDICTS",
    "Claim",
    "all_points",
    "mean_ci",
    "flat_claim",
    "flat_within",
    "fmt_series",
    "mean_below",
    "mean_within",
    "monotone_trend",
    "paired_difference_ci",
    "point_means",
    "trend_claim",
    "trial_values",
    "verdict_of",
]
