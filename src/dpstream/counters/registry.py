"""Counter descriptors: one line per counter class, a factorisation with a noise source (``counters.sources``).

Derived from them, nowhere typed again: ``COUNTERS`` (``counter_class``: the class of ``counter=`` and
``node_noise=``, each class stating its ``name`` and its ``source``), the counter names a sketch accepts, and, for
the counters marked ``probed``, the sensitivity cases ``GaussBM_<name>`` and ``LazyCMS_<name>``
(``audit.sensitivity_cases``) and the check spec ``GaussBM_<name>`` (``testing.shipped``: the first release's noise
against the factorisation's row norm at step 1, its sensitivity case, a search audit). A new counter is its module,
one line here and its test.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpstream.counters.base import Counter
from dpstream.counters.binary import DerivedBinary, StoredBinary
from dpstream.counters.blt import BLTCounter
from dpstream.counters.blt_derived import DerivedBLT
from dpstream.counters.discrete import AheadDiscreteBinary, ConstantTimeDiscreteBinary, DiscreteSecureBinary
from dpstream.counters.discrete_stored import HonakerDiscreteSecure, StoredDiscreteSecureBinary
from dpstream.counters.honaker import HonakerTree
from dpstream.counters.hybrid import HybridDerived
from dpstream.counters.laplace_discrete import DiscreteLaplaceTree
from dpstream.counters.laplace_tree import LaplaceTree
from dpstream.counters.normalised import NormalisedSqrt
from dpstream.counters.smooth import SmoothDerived, SmoothDiscreteSecure, SmoothStored
from dpstream.counters.toeplitz import (
    BandedSqrt4,
    BandedSqrt16,
    BandedSqrt64,
    DerivedBandedSqrt16,
    DerivedSqrt,
    SqrtFactorisation,
)
from dpstream.counters.unbounded import DerivedUnbounded, UnboundedFactorisation

TOEPLITZ_NOISE = "tests/counters/test_toeplitz.py::test_noise_variance_matches_the_row_norms_at_several_steps"


@dataclass(frozen=True)
class CounterDescriptor:
    """A counter class; for a ``probed`` one (stored noise) the test that checks its noise against its formula.

    A probed counter's sensitivity cases and check spec are derived; ``noise_test`` is the pytest node id the check
    spec cites.
    """

    cls: type[Counter]
    probed: bool = False
    noise_test: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """(counter, node_noise): the configuration's names of this class."""
        return self.cls.name, self.cls.node_noise


DESCRIPTORS: tuple[CounterDescriptor, ...] = (
    CounterDescriptor(StoredBinary),
    CounterDescriptor(DerivedBinary),
    CounterDescriptor(DiscreteSecureBinary),
    CounterDescriptor(AheadDiscreteBinary),
    CounterDescriptor(ConstantTimeDiscreteBinary),
    CounterDescriptor(StoredDiscreteSecureBinary),
    CounterDescriptor(HonakerTree),
    CounterDescriptor(HonakerDiscreteSecure),
    CounterDescriptor(BLTCounter),
    CounterDescriptor(DerivedBLT),
    CounterDescriptor(SmoothStored),
    CounterDescriptor(SmoothDerived),
    CounterDescriptor(SmoothDiscreteSecure),
    CounterDescriptor(LaplaceTree),
    CounterDescriptor(DiscreteLaplaceTree),
    CounterDescriptor(HybridDerived),
    CounterDescriptor(SqrtFactorisation, probed=True, noise_test=TOEPLITZ_NOISE),
    CounterDescriptor(BandedSqrt4, probed=True, noise_test=TOEPLITZ_NOISE),
    CounterDescriptor(BandedSqrt16),
    CounterDescriptor(BandedSqrt64),
    CounterDescriptor(DerivedSqrt),
    CounterDescriptor(DerivedBandedSqrt16),
    CounterDescriptor(UnboundedFactorisation, probed=True, noise_test=TOEPLITZ_NOISE),
    CounterDescriptor(DerivedUnbounded),
    CounterDescriptor(NormalisedSqrt),
)
"""Every counter of the package, one line each."""


def _counters() -> dict[tuple[str, str], type[Counter]]:
    found: dict[tuple[str, str], type[Counter]] = {}
    for d in DESCRIPTORS:
        if found.setdefault(d.key, d.cls) is not d.cls:
            raise ValueError(f"counter {d.key} is declared twice: {found[d.key].__name__} and {d.cls.__name__}")
    return found


COUNTERS = _counters()
"""Every counter class by (counter, node noise)."""
PROBED: tuple[str, ...] = tuple(d.cls.name for d in DESCRIPTORS if d.probed)
NOISE_TESTS: dict[str, str] = {d.cls.name: d.noise_test for d in DESCRIPTORS if d.probed}
"""The noise test of each probed counter, by name."""
"""The counters (stored noise) whose sensitivity cases and check spec are derived from their descriptor."""
