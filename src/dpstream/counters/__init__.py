"""Continual counters behind one interface (``Counter``).

The binary tree with stored or derived node noise, Honaker's estimates on the binary tree, the buffered linear
Toeplitz (BLT) counter with its noise stored in buffers or derived from a key, the smooth binary mechanism
(``smooth``: the same variance at every step, exact discrete noise too), the k-ary Laplace tree for pure DP
(``laplace``), the hybrid mechanism, which needs no horizon (``hybrid``), the square-root factorisation, plain and
banded (``counters.toeplitz``), the normalised square root (``nsqrt``, ``counters.normalised``), and a factorisation
with no horizon, the square root perturbed by logarithms (``unbounded``, ``counters.unbounded``).

A counter is a factorisation class with a noise source: every class takes it as ``node_noise=`` (one of its
``NOISES``: ``tree_noise``, ``discrete``, ``laplace_tree``; ``NormalisedSqrt`` and ``HybridDerived`` take one).
``counter_class(counter, node_noise)`` reads the counters' descriptors (``counters.registry``, one line a class) and
returns the pair's (``CounterDescriptor``: called, it builds the counter; it states the pair's memory model, draws and
kernel); it is the one place a configuration's choice becomes a counter; an unknown or unavailable combination is an
error naming it and listing what is allowed. A counter of your own, outside the package, is named by its import path,
``counter="my_module:MyCounter"`` (a ``Counter`` subclass): nothing to register.
"""

from __future__ import annotations

import importlib
from typing import Any

from dpstream.counters import sources
from dpstream.counters.base import Counter
from dpstream.counters.binary import BinaryTree, popcount
from dpstream.counters.blt import BLTCounter
from dpstream.counters.honaker import HonakerTree
from dpstream.counters.hybrid import HybridDerived
from dpstream.counters.laplace_tree import LaplaceTree
from dpstream.counters.normalised import NormalisedSqrt
from dpstream.counters.registry import COUNTERS, CounterDescriptor
from dpstream.counters.smooth import SmoothBinary
from dpstream.counters.toeplitz import SqrtFactorisation, banded_sqrt
from dpstream.counters.unbounded import UnboundedFactorisation

COUNTER_NAMES = tuple(sorted({c for c, _ in COUNTERS}))
"""The counter names a sketch accepts (``counter=``)."""
NODE_NOISES = sources.NODE_NOISES
"""The node-noise modes a sketch accepts (``node_noise=``): stored tree nodes, nodes derived from Philox, exact
discrete Gaussian nodes derived at release from a keyed ChaCha20 stream (``dpstream.secure``), the same keeping a
block's nodes drawn ahead (``discrete_secure_ahead``: fewer draws, 8 more bytes a counter), the same with a
constant-time sampler (``discrete_secure_ct``: fixed work per draw, its small distance from exact added to delta), or
exact discrete Gaussian nodes drawn once when they close and stored (``discrete_secure_stored``; exact discrete
Laplace nodes for ``counter="laplace"``)."""


def _own_counter(path: str) -> type[Counter]:
    """The ``Counter`` subclass at ``module:Class``."""
    module, _, name = path.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"counter {path!r} cannot be imported ({err}); give module:Class of a Counter") from err
    if not (isinstance(cls, type) and issubclass(cls, Counter)):
        raise ValueError(f"counter {path!r} is not a dpstream.counters.Counter subclass")
    return cls


def counter_class(counter: str = "binary", node_noise: str = "stored") -> CounterDescriptor:
    """The counter ``counter`` (binary, ...) with node noise ``node_noise`` (``NODE_NOISES``): its descriptor.

    Called, it builds the counter; ``.cls`` is its class. ``counter`` may be ``module:Class`` of a ``Counter``
    defined elsewhere; ``node_noise`` must then be one of its ``NOISES``.
    """
    if ":" in counter:
        cls = _own_counter(counter)
        cls.noise_of(node_noise)  # a node noise the class does not take: one line naming those it does
        return CounterDescriptor(cls, node_noise)
    names = sorted({c for c, _ in COUNTERS})
    if counter not in names:
        raise ValueError(f"unknown counter {counter!r}; allowed: {', '.join(names)}")
    if node_noise not in NODE_NOISES:
        raise ValueError(f"unknown node_noise {node_noise!r}; allowed: {', '.join(NODE_NOISES)}")
    if counter == "blt" and node_noise.startswith("discrete_secure"):
        raise ValueError(f"node_noise={node_noise!r} is not available with counter='blt': its factorisation adds "
                         "real-valued noise (A C^-1 z), so no exact integer noise certifies it; allowed: stored")
    if (counter, node_noise) not in COUNTERS:
        allowed = ", ".join(n for c, n in COUNTERS if c == counter)
        raise ValueError(f"node_noise={node_noise!r} is not available with counter={counter!r}; allowed: {allowed}")
    return COUNTERS[counter, node_noise]


def node_noise_version(mechanism: dict[str, Any]) -> dict[str, str]:
    """Code versions of the node noise of a mechanism config (entries of its store key; empty for most).

    The version of the source of the config's counter (``counter`` and ``node_noise``, by default binary and
    stored; empty for a pair no counter takes): derived node noise is a function of the code's normal transform
    (``counters.philox.NODE_NORMAL``), exact discrete node noise of its sampler (``secure.samplers.EXACT_SAMPLER``,
    ``secure.samplers.LAPLACE_SAMPLER``; ``discrete_secure_ct`` has its own table sampler).
    """
    counter, node_noise = mechanism.get("counter") or "binary", mechanism.get("node_noise") or "stored"
    found = counter_class(counter, node_noise) if ":" in counter else COUNTERS.get((counter, node_noise))
    return {} if found is None else found.source.version()


__all__ = ["COUNTERS", "COUNTER_NAMES", "NODE_NOISES", "BLTCounter", "BinaryTree", "Counter", "CounterDescriptor",
           "HonakerTree", "HybridDerived", "LaplaceTree", "NormalisedSqrt", "SmoothBinary", "SqrtFactorisation",
           "UnboundedFactorisation", "banded_sqrt", "counter_class", "node_noise_version", "popcount"]
