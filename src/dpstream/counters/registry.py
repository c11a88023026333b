"""Counter descriptors: one line per counter class, a factorisation with its noise sources (``counters.sources``).

Derived from them, nowhere typed again: ``COUNTERS`` (``counter_class``: the counter of ``counter=`` and
``node_noise=``, each class stating its ``name`` and its sources), the counter names a sketch accepts, and, for
the counters marked ``probed``, the sensitivity cases ``GaussBM_<name>`` and ``LazyCMS_<name>``
(``audit.sensitivity_cases``) and the check spec ``GaussBM_<name>`` (``testing.shipped``: the first release's noise
against the factorisation's row norm at step 1, its sensitivity case, a search audit). A new counter is its module,
one line here and its test.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from dpstream.counters.base import Counter
from dpstream.counters.binary import BinaryTree
from dpstream.counters.blt import BLTCounter
from dpstream.counters.honaker import HonakerTree
from dpstream.counters.hybrid import HybridDerived
from dpstream.counters.laplace_tree import LaplaceTree
from dpstream.counters.normalised import NormalisedSqrt
from dpstream.counters.smooth import SmoothBinary
from dpstream.counters.sources import NodeNoise
from dpstream.counters.toeplitz import BandedSqrt4, BandedSqrt16, BandedSqrt64, SqrtFactorisation
from dpstream.counters.unbounded import UnboundedFactorisation

TOEPLITZ_NOISE = "tests/counters/test_toeplitz.py::test_noise_variance_matches_the_row_norms_at_several_steps"


@dataclass(frozen=True)
class CounterDescriptor:
    """A counter: its factorisation class with one noise source; for a ``probed`` one the test of its noise formula.

    What a caller needs before building the counter is the pair's, read here: its memory model (``bytes_per_counter``,
    ``working_bytes``, ``fixed_bytes``), its draws per push and kernel, the sense of its guarantee; calling the
    descriptor builds the counter (``cls(node_noise=..., **kwargs)``). Anything else (``l2_sensitivity``,
    ``tree_levels``, ...) is the class's, read through. A probed counter's sensitivity cases and check spec are
    derived; ``noise_test`` is the pytest node id the check spec cites.
    """

    cls: type[Counter]
    noise: str = ""
    """The name of the source (``node_noise=``, one of the class's ``NOISES``); empty: the class's default."""
    probed: bool = False
    noise_test: str = ""

    @functools.cached_property
    def nodes(self) -> Any:
        """The class's handler of this source (``Counter.noise_of``): its layout and facts."""
        return self.cls.noise_of(self.noise or None)

    @property
    def source(self) -> NodeNoise:
        """Where the counter's noise comes from (``counters.sources``)."""
        return self.nodes.source

    @property
    def name(self) -> str:
        """The counter's name (``counter=``)."""
        return self.cls.name

    @property
    def node_noise(self) -> str:
        """The source's name (``node_noise=``)."""
        return self.source.name

    @property
    def key(self) -> tuple[str, str]:
        """(counter, node_noise): the configuration's names of this counter."""
        return self.cls.name, self.source.name

    @property
    def label(self) -> str:
        """The class name, with the node noise for a class whose states name it (``BinaryTree.derived``)."""
        return f"{self.cls.__name__}.{self.source.name}" if self.cls.names_noise() else self.cls.__name__

    @functools.cached_property
    def _facts(self) -> dict[str, Any]:
        return self.cls.noise_facts(self.nodes)

    @property
    def notion(self) -> str:
        """The sense of the (epsilon, delta) guarantee: the source's."""
        return self.source.notion

    @property
    def sparse_pushes(self) -> bool:
        """A push of 0 changes nothing (noise derived at release), so a schedule may skip it."""
        return self.source.sparse_pushes

    @property
    def fixed_bytes(self) -> int:
        """Memory model: bytes held once per counter array (the source's key)."""
        return self.source.key_bytes

    @property
    def kind(self) -> int:
        """The compiled push (``counters._kernels``)."""
        return int(self._facts["kind"])

    @property
    def tracks_steps(self) -> bool:
        """Whether the counter keeps each counter's step."""
        return bool(self._facts["tracks_steps"])

    @property
    def draws_per_push(self) -> int:
        """Noise draws per push, on average (0 when the source draws at release)."""
        return int(self._facts["draws_per_push"])

    @property
    def partial_release(self) -> bool:
        """Whether ``release_wanted`` saves work over ``release_all``."""
        return bool(self._facts["partial_release"])

    def bytes_per_counter(self, horizon: int, count_bytes: int) -> int:
        """Memory model: bytes of state per counter with this source (``Counter.counter_bytes``)."""
        return int(self.nodes.bytes_per_counter(self.cls, horizon, count_bytes))

    def working_bytes(self, horizon: int) -> int:
        """Memory model: peak bytes of the tables the counter builds with this source (``Counter.working_bytes``)."""
        return self.cls.working_bytes(horizon, self.source)

    def __call__(self, **kwargs: Any) -> Any:
        """The counter built with ``kwargs`` (``Counter``'s arguments) and this node noise."""
        return self.cls(node_noise=self.source.name, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        """The class's attribute (``l2_sensitivity``, ...): nothing else depends on the source."""
        if attr.startswith("__") or attr == "cls":
            raise AttributeError(attr)
        return getattr(self.cls, attr)


def offered(cls: type[Counter], *noises: str, **kwargs: Any) -> tuple[CounterDescriptor, ...]:
    """One descriptor per node noise ``noises`` of ``cls`` (none given: every one of its ``NOISES``).

    ``kwargs`` go to the first (the stored one: ``probed``, ``noise_test``).
    """
    names = noises or tuple(cls.NOISES)
    return tuple(CounterDescriptor(cls, noise, **(kwargs if i == 0 else {})) for i, noise in enumerate(names))


DESCRIPTORS: tuple[CounterDescriptor, ...] = (
    *offered(BinaryTree),
    *offered(HonakerTree),
    *offered(BLTCounter),
    *offered(SmoothBinary),
    *offered(LaplaceTree),
    *offered(HybridDerived),
    *offered(SqrtFactorisation, "stored", probed=True, noise_test=TOEPLITZ_NOISE),
    *offered(BandedSqrt4, "stored", probed=True, noise_test=TOEPLITZ_NOISE),
    *offered(BandedSqrt16, "stored"),
    *offered(BandedSqrt64, "stored"),
    *offered(SqrtFactorisation, "derived"),
    *offered(BandedSqrt16, "derived"),
    *offered(UnboundedFactorisation, probed=True, noise_test=TOEPLITZ_NOISE),
    *offered(NormalisedSqrt),
)
"""Every counter of the package, one descriptor per node noise it is offered with (in the order of the tables
derived from them: the square roots' derived noise after their stored noise)."""


def _counters() -> dict[tuple[str, str], CounterDescriptor]:
    found: dict[tuple[str, str], CounterDescriptor] = {}
    for d in DESCRIPTORS:
        if found.setdefault(d.key, d) is not d:
            raise ValueError(f"counter {d.key} is declared twice: {found[d.key].label} and {d.label}")
    return found


COUNTERS = _counters()
"""Every counter by (counter, node noise)."""
PROBED: tuple[str, ...] = tuple(d.cls.name for d in DESCRIPTORS if d.probed)
"""The counters (stored noise) whose sensitivity cases and check spec are derived from their descriptor."""
NOISE_TESTS: dict[str, str] = {d.cls.name: d.noise_test for d in DESCRIPTORS if d.probed}
"""The noise test of each probed counter, by name."""
