"""Noise sources of the counters: where the noise z of a factorisation A = B C comes from, and its distribution.

A counter releases A x + B z (``counters.factorisation``); the factorisation says which noises a release sums and
with which weights (its row norms), the source says how each draw of z is made: stored when a node closes (numpy's
generator, or exact discrete Gaussian draws from a keyed ChaCha20 stream), or derived at release from a secret key
(Philox4x64-10 for N(0, 1), ChaCha20 for exact discrete Gaussian draws, with or without the block's nodes kept ahead,
or with a constant-time table sampler). A release's variance is the factorisation's squared row norm times the
source's ``draw_variance``.

Models: TF Privacy's ``ValueGenerator`` (``tree_aggregation.py``: a stateful generator the tree asks for node noise,
stored or from a seed) and jax_privacy's ``StreamingMatrix`` (``row_norms_squared``: variance from the rows of B).

A source states what callers used to read from per-class switches: when it draws (``draws_at_push``; a push of 0
may be skipped when the noise is derived, ``sparse_pushes``), the sense of the guarantee (``notion``), the bytes it
holds once per counter array (``key_bytes``) and the code versions a store key records (``version``).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Literal

from dpstream.privacy.statement import Notion
from dpstream.secure.chacha import KEY_BYTES

Drawn = Literal["push", "release"]
Distribution = Literal["gaussian", "laplace", "discrete_gaussian", "discrete_laplace"]

PHILOX_KEY_BYTES = 16
"""The 128-bit Philox key of derived noise."""
DRAWN_BYTES = 8
"""The int64 number of keyed draws made so far (stored discrete noise: the next draw's stream number)."""


@dataclass(frozen=True)
class NodeNoise:
    """One way of drawing a counter's noise: its config name (``node_noise=``), when and how it draws.

    ``drawn``: "push" (a node's noise is drawn when it closes and stored) or "release" (derived from the key when a
    release needs it; pushes touch the exact counts only). ``version``: the code versions a store key must record,
    since derived or keyed values are a function of that code: ``version_name`` and the constant ``version_of``
    ("module:NAME") holding it, read when a key is computed.
    """

    name: str
    drawn: Drawn
    distribution: Distribution
    notion: Notion
    key_bytes: int = 0
    version_name: str | None = None
    version_of: str | None = None

    @property
    def draws_at_push(self) -> bool:
        """Whether pushes consume draws (stored noise) rather than releases deriving them."""
        return self.drawn == "push"

    @property
    def sparse_pushes(self) -> bool:
        """A push of 0 changes nothing, so a schedule may skip it: the noise is derived at release."""
        return self.drawn == "release"

    def draw_variance(self, scale: float) -> float:
        """The variance of one draw at scale ``scale``: scale^2, or 2 scale^2 for Laplace of scale b.

        For the discrete Gaussian at sigma^2 = scale^2, scale^2 is an upper bound of its variance. The discrete
        Laplace of scale b has 2 q / (1 - q)^2, q = exp(-1/b), slightly below 2 b^2.
        """
        if self.distribution == "discrete_laplace":
            q = math.exp(-1.0 / scale)
            return 2.0 * q / (1.0 - q) ** 2
        return 2.0 * scale**2 if self.distribution == "laplace" else scale**2

    def version(self) -> dict[str, str]:
        """The store-key entries of this source's code version (empty: numpy's stored draws)."""
        if self.version_name is None or self.version_of is None:
            return {}
        module, name = self.version_of.split(":")
        return {self.version_name: str(getattr(importlib.import_module(module), name))}


STORED = NodeNoise("stored", "push", "gaussian", "approximate")
"""N(0, sigma^2) from the counter's numpy generator, drawn when a node closes and stored."""
STORED_LAPLACE = NodeNoise("stored", "push", "laplace", "pure")
"""Laplace(b) from the counter's numpy generator, drawn when a node closes and stored (pure DP)."""
NODE_NORMAL = "dpstream.counters.philox:NODE_NORMAL"
"""The normal transform of derived noise (``philox.NODE_NORMAL``)."""
EXACT_SAMPLER = "dpstream.secure.samplers:EXACT_SAMPLER"
"""The exact discrete Gaussian sampler (``secure.samplers.EXACT_SAMPLER``)."""
LAPLACE_SAMPLER = "dpstream.secure.samplers:LAPLACE_SAMPLER"
"""The exact discrete Laplace sampler (``secure.samplers.LAPLACE_SAMPLER``)."""

DERIVED = NodeNoise("derived", "release", "gaussian", "computational", PHILOX_KEY_BYTES, "node_normal",
                      NODE_NORMAL)
"""N(0, sigma^2) derived at release from a Philox4x64-10 key (``counters.philox``)."""
DISCRETE_SECURE = NodeNoise("discrete_secure", "release", "discrete_gaussian", "computational", KEY_BYTES,
                              "exact_sampler", EXACT_SAMPLER)
"""Exact N_Z(0, sigma^2) derived at release from a ChaCha20 key (``secure``), a block's nodes drawn again."""
DISCRETE_SECURE_AHEAD = NodeNoise("discrete_secure_ahead", "release", "discrete_gaussian", "computational",
                                    KEY_BYTES, "exact_sampler", EXACT_SAMPLER)
"""As ``DISCRETE_SECURE``, keeping a block's nodes drawn ahead (fewer draws, state per counter)."""
DISCRETE_SECURE_CT = NodeNoise("discrete_secure_ct", "release", "discrete_gaussian", "computational", KEY_BYTES)
"""As ``DISCRETE_SECURE`` with a constant-time table sampler (its own table, no exact-sampler version)."""
DISCRETE_SECURE_STORED = NodeNoise("discrete_secure_stored", "push", "discrete_gaussian", "computational",
                                     KEY_BYTES + DRAWN_BYTES, "exact_sampler", EXACT_SAMPLER)
"""Exact N_Z(0, sigma^2) from a ChaCha20 key, drawn when a node closes and stored."""
DISCRETE_SECURE_STORED_LAPLACE = NodeNoise("discrete_secure_stored", "push", "discrete_laplace", "computational",
                                             KEY_BYTES + DRAWN_BYTES, "laplace_sampler", LAPLACE_SAMPLER)
"""Exact discrete Laplace from a ChaCha20 key (``secure.sequential.laplace_draws``), drawn when a node closes and
stored: the Laplace tree's deployable noise (pure DP, computationally)."""

SOURCES: tuple[NodeNoise, ...] = (STORED, STORED_LAPLACE, DERIVED, DISCRETE_SECURE, DISCRETE_SECURE_AHEAD,
                                    DISCRETE_SECURE_CT, DISCRETE_SECURE_STORED, DISCRETE_SECURE_STORED_LAPLACE)
"""Every noise source of the package's counters."""
NODE_NOISES: tuple[str, ...] = tuple(dict.fromkeys(s.name for s in SOURCES))
"""The node-noise names a configuration takes (``node_noise=``), one per way of drawing."""
