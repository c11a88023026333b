"""Data sets over binary attributes {0,1}^d for query release, as record codes and dense histograms.

A record x in {0,1}^d is stored as the integer code sum_i x_i 2^(d-1-i) (attribute 0 is the most significant bit), so
``histogram(records, d).reshape((2,) * d)`` has one axis per attribute in attribute order.
"""

from __future__ import annotations

import numpy as np

from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.validation import check_positive_int

#: Largest dense array (bytes) any query-release structure may allocate; d beyond it gets a clear error.
MAX_DENSE_BYTES = 2**30


def check_dense(d: int, base: int = 2, copies: int = 1) -> int:
    """Validate ``d`` for a dense float64 array of ``copies * base**d`` entries; return d.

    Raises ``ValueError`` naming the memory it would need when that exceeds ``MAX_DENSE_BYTES``.
    """
    d = check_positive_int(d, "d")
    need = copies * base**d * 8
    if need > MAX_DENSE_BYTES:
        raise ValueError(
            f"d = {d} is too large for a dense {base}^{d} array: it would need {need / 2**30:.1f} GiB "
            f"(limit {MAX_DENSE_BYTES / 2**30:.0f} GiB)"
        )
    return d


def histogram(records: np.ndarray, d: int) -> np.ndarray:
    """Normalised histogram over {0,1}^d (length 2^d, sums to 1) of integer record codes."""
    d = check_dense(d)
    records = np.asarray(records)
    if records.size == 0 or records.min() < 0 or records.max() >= 2**d:
        raise ValueError(f"records must be a non-empty array of codes in [0, 2^{d}), got {records!r:.80}")
    return np.bincount(records, minlength=2**d).astype(np.float64) / records.size


def codes_from_bits(bits: np.ndarray) -> np.ndarray:
    """Integer codes of an (n, d) 0/1 matrix (attribute 0 is the most significant bit)."""
    bits = np.asarray(bits, dtype=np.int64)
    weights = 1 << np.arange(bits.shape[1] - 1, -1, -1, dtype=np.int64)
    return bits @ weights


def product_mixture(n: int, d: int, components: int = 3, concentration: float = 0.5,
                    seed: SeedLike = None) -> np.ndarray:
    """Draw n records from a mixture of ``components`` product distributions over {0,1}^d.

    Mixture weights ~ Dirichlet(1); each component's attribute marginals ~ Beta(concentration, concentration),
    so small ``concentration`` gives sharp, well-separated clusters.
    """
    n = check_positive_int(n, "n")
    d = check_dense(d)
    components = check_positive_int(components, "components")
    if not concentration > 0:
        raise ValueError(f"concentration must be > 0, got {concentration!r}")
    rng = np.random.default_rng(as_seed_sequence(seed))
    weights = rng.dirichlet(np.ones(components))
    marginals = rng.beta(concentration, concentration, size=(components, d))
    which = rng.choice(components, size=n, p=weights)
    bits = rng.random((n, d)) < marginals[which]
    return codes_from_bits(bits)


# Fair's extramarital-affairs survey (statsmodels.datasets.fair, 6366 rows): one binary attribute per line.
FAIR_ATTRIBUTES = (
    ("affairs", 0.0),
    ("rate_marriage", 4.5),
    ("children", 0.5),
    ("religious", 2.5),
    ("educ", 15.0),
    ("age", 27.0),
    ("yrs_married", 6.0),
    ("occupation", 3.5),
    ("occupation_husb", 4.5),
    ("age", 32.0),
    ("yrs_married", 16.0),
    ("children", 2.5),
)


def fair_affairs(n: int, d: int = 12, seed: SeedLike = None) -> np.ndarray:
    """Draw n records (sampled without replacement) of Fair's affairs survey binarised to d <= 12 attributes.

    Real data shipped inside the ``statsmodels`` package (``statsmodels.datasets.fair``, 6366 rows, no network);
    attribute i is ``column > threshold`` for the i-th entry of ``FAIR_ATTRIBUTES``.
    """
    from statsmodels.datasets import fair  # local import: only this loader needs statsmodels

    frame = fair.load_pandas().data
    d = check_positive_int(d, "d")
    if d > len(FAIR_ATTRIBUTES):
        raise ValueError(f"d must be <= {len(FAIR_ATTRIBUTES)} for fair_affairs, got {d}")
    n = check_positive_int(n, "n")
    if n > len(frame):
        raise ValueError(f"n must be <= {len(frame)} (rows of the Fair data set), got {n}")
    bits = np.column_stack([frame[col].to_numpy() > thr for col, thr in FAIR_ATTRIBUTES[:d]])
    rows = np.random.default_rng(as_seed_sequence(seed)).choice(len(frame), size=n, replace=False)
    return codes_from_bits(bits[rows])


def categorical(n: int, universe_size: int, concentration: float = 1.0, seed: SeedLike = None) -> np.ndarray:
    """Draw n records over a toy universe {0..|X|-1} from a Dirichlet(concentration) random distribution (spec E10)."""
    n = check_positive_int(n, "n")
    universe_size = check_positive_int(universe_size, "universe_size", minimum=2)
    rng = np.random.default_rng(as_seed_sequence(seed))
    return rng.choice(universe_size, size=n, p=rng.dirichlet(np.full(universe_size, concentration)))
