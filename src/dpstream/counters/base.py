"""The counter interface: n independent continual counters.

The owner (``GaussBM``, a sketch schedule) says which counter takes which step; the counter keeps the state, draws
its noise, releases prefix sums and states its noise variance and its memory.

A counter is calibrated once, here: sigma = ``calibration.gaussian_sigma(l2_sensitivity(horizon, m), eps,
delta, calibration)`` ("classic", the papers', or "analytic", Balle and Wang 2018), where ``l2_sensitivity``
is the counter's own (sqrt(h m) for the binary tree: one step of each of m counters moves h node values by
at most 1; the factorisation's column norm times sqrt(m) for BLT).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np

from dpstream import serial
from dpstream.counters import _kernels as kernels
from dpstream.counters.factorisation import Factorisation
from dpstream.counters.sources import STORED, NodeNoise
from dpstream.noise import NoiseSource, SeedLike, noise_mode
from dpstream.privacy.calibration import CALIBRATIONS, gauss_bm_levels, gaussian_sigma
from dpstream.privacy.maps import GaussianMap, PrivacyMap
from dpstream.privacy.statement import Certified, Notion, Privacy, Relation
from dpstream.validation import check_allocation, check_delta, check_epsilon, check_positive_int

STEP_BYTES = 8
"""An int64 step count (Alg. 1 keeps one per counter)."""
NOISE_BYTES = 8
"""A float64 noise value or noisy sum."""
_NO_DRAWS = np.zeros(0)
"""The noise of a push of the package's counters whose source derives the noise at release (``sparse_pushes``): it
draws nothing, so the source is not asked (a push of derived noise is about 10 us: two calls less is a few percent)."""


COUNT_DTYPES = ("int32", "int64")
"""The count dtypes a counter keeps its exact counts in (by name)."""


def source_facts(source: NodeNoise) -> dict[str, Any]:
    """What a counter states of its noise source ``source`` alone: its name, notion, sparse pushes and key bytes."""
    return {"source": source, "node_noise": source.name, "notion": source.notion,
            "sparse_pushes": source.sparse_pushes, "fixed_bytes": source.key_bytes}


FACTS = ("source", "node_noise", "notion", "sparse_pushes", "fixed_bytes", "kind", "tracks_steps", "draws_per_push",
         "partial_release")
"""The per-source attributes of a counter (``Counter.noise_facts``)."""


class OwnSource:
    """The one noise source of a counter class that takes no other: its facts are the class's attributes."""

    def __init__(self, source: NodeNoise) -> None:
        """The class's ``source``."""
        self.source = source

    def __repr__(self) -> str:
        """The class and its source's name."""
        return f"{type(self).__name__}({self.source.name!r})"

    def facts(self, cls: type[Counter]) -> dict[str, Any]:
        """The class attributes ``FACTS``."""
        return {attr: getattr(cls, attr) for attr in FACTS}

    def bytes_per_counter(self, cls: type[Counter], horizon: int, count_bytes: int) -> int:
        """The class's memory model (``bytes_per_counter``)."""
        return cls.bytes_per_counter(horizon, count_bytes)


class Counter(Certified, serial.Serialisable, ABC):
    """``n`` continual counters over ``horizon`` steps each.

    Privacy: (epsilon, delta)-DP for m-neighbouring inputs (one neighbour changes at most m counters, each by at
    most 1 at one step) under continual observation.

    ``state``: a NamedTuple of the arrays the compiled push reads and writes, passed to every compiled kernel
    unpacked (``*counter.state``). ``kind``: the package's counters have a code in ``counters._kernels.KINDS``
    whose compiled loops are cached on disk; a counter defined elsewhere keeps ``kind = EXTERNAL`` and sets the
    class attribute ``push_kernel = my_push``, an ``njit`` function ``(state, cell, step, c, noise, z) -> next z``
    (``counters._kernels``): its loops are compiled once per process and push function, shared by every instance
    (each instance reads it as a new bound method; ``specialise`` keys on the function under it), uncached.
    ``sparse_pushes``: a push of 0 changes nothing, so a schedule may skip it (derived noise); ``tracks_steps``: the
    counter keeps each counter's step (Alg. 1) and ``release`` may ignore the steps it is given; otherwise the owner
    supplies them.

    ``to_bytes`` / ``from_bytes`` (``dpstream.serial``) write the arguments, the noise generator and the arrays of
    ``_state_arrays`` (SECRET, see ``serial.Serialisable.to_bytes``); the owner's steps are the owner's to write.
    """

    name: ClassVar[str]
    NOISES: ClassVar[Mapping[str, Any]]
    """The noise sources the counter takes, by ``node_noise=`` name; the first is the default. A factorisation with
    several (``FactorisedCounter``) holds a handler per source (``tree_noise``, ``discrete``); any other class its one
    ``source`` (``OwnSource``)."""
    source: NodeNoise = STORED
    """Where the noise of the factorisation comes from (``counters.sources``); the next four follow from it. These
    per-source facts are class attributes for the default source (all of ``FACTS`` only for a class with one source)
    and instance attributes for the source chosen (``noise_facts``): read them from an instance or from
    ``counter_class(counter, node_noise)``."""
    node_noise: str
    """The source's name (``node_noise=``)."""
    notion: Notion
    """The sense of the (epsilon, delta) guarantee (``privacy.Privacy.notion``): the source's."""
    sparse_pushes: bool
    """A push of 0 changes nothing, so a schedule may skip it: the source derives its noise at release."""
    fixed_bytes: int
    """Memory model: bytes held once per counter array (the source's key), on top of ``bytes_per_counter`` each."""
    kind: int = kernels.EXTERNAL
    push_kernel: ClassVar[Any] = None
    state: NamedTuple
    tracks_steps: bool
    draws_per_push: int
    """Noise draws per push (on average, for buffer sizing): 0 when the source draws at release."""
    partial_release: bool = False
    """Whether ``release_wanted`` saves work over ``release_all`` (a reader then says which cells it reads)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Derive ``node_noise``, ``notion``, ``sparse_pushes`` and ``fixed_bytes`` from ``source``.

        A class naming its ``NOISES`` has the first one's source. Noise derived at release also means no draws at
        push. A class that states one itself keeps it (a counter defined elsewhere); a class with neither ``NOISES``
        nor an inherited one takes its ``source`` alone (``OwnSource``).
        """
        if "NOISES" in cls.__dict__ and "source" not in cls.__dict__:
            cls.source = next(iter(cls.NOISES.values())).source
        super().__init_subclass__(**kwargs)
        source = cls.source
        derived = {attr: value for attr, value in source_facts(source).items() if attr != "source"}
        if not source.draws_at_push:
            derived["draws_per_push"] = 0
        for attr, value in derived.items():
            if attr not in cls.__dict__:
                setattr(cls, attr, value)
        if "NOISES" not in cls.__dict__ and (getattr(cls, "NOISES", None) is None or "source" in cls.__dict__):
            cls.NOISES = {source.name: OwnSource(source)}

    _repr_attrs: ClassVar[dict[str, str]] = {"node_noise": "_chosen_noise"}
    fixed_arrays = True

    def __init__(
        self,
        *,
        node_noise: str | None = None,
        n: int,
        horizon: int,
        epsilon: float,
        delta: float,
        m: int = 1,
        seed: SeedLike = None,
        calibration: str = "classic",
        count_dtype: type = np.int64,
        kappa: float = 1.0,
    ) -> None:
        """Validate the arguments, calibrate sigma (``gaussian_sigma``) and allocate the state arrays.

        ``node_noise`` names one of ``NOISES`` (None: the first); the counter states its facts (``noise_facts``).
        ``kappa`` (the noise multiplier) != 1 scales every noise and is NOT privacy-certified (``certified`` is then
        False).
        """
        self.nodes = self.noise_of(node_noise)
        self._chosen_noise = None if self.nodes is self.noise_of(None) else self.nodes.source.name  # for ``repr``
        self._seed = seed
        for attr, value in self.noise_facts(self.nodes).items():
            setattr(self, attr, value)
        self.n = check_positive_int(n, "n")
        self.horizon = check_positive_int(horizon, "horizon")
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.m = check_positive_int(m, "m")
        self.levels = self.tree_levels(self.horizon)
        count_bytes = np.dtype(count_dtype).itemsize
        check_allocation(self.n * self.counter_bytes(self.horizon, count_bytes, self.source) + self.fixed_bytes,
                         f"{type(self).__name__}(n={self.n}, horizon={self.horizon})")
        self.calibration = calibration
        self.sigma = gaussian_sigma(self.l2_sensitivity(self.horizon, self.m), self.epsilon, self.delta, calibration)
        self.kappa = kappa
        self._noise_scale = self.sigma * kappa
        self._noise = NoiseSource(seed)
        self.count_dtype = count_dtype
        self._steps = np.zeros(self.n if self.tracks_steps else 0, dtype=np.int64)
        self._allocate()

    @classmethod
    def noise_of(cls, node_noise: str | None) -> Any:
        """The source named ``node_noise`` (None: the default) from ``NOISES``, or an error listing those allowed."""
        if node_noise is None:
            return next(iter(cls.NOISES.values()))
        if not isinstance(node_noise, str) or node_noise not in cls.NOISES:
            raise ValueError(f"node_noise={node_noise!r} is not available with counter={cls.name!r}; allowed: "
                             f"{', '.join(cls.NOISES)}")
        return cls.NOISES[node_noise]

    @classmethod
    def noise_facts(cls, nodes: Any) -> dict[str, Any]:
        """What a counter of this class with the source ``nodes`` (of ``NOISES``) states: the attributes ``FACTS``."""
        return dict(nodes.facts(cls))

    @classmethod
    def tree_levels(cls, horizon: int) -> int:
        """Levels of the counter's tree (``levels``): the binary tree's h = ceil(log2(horizon + 1)) by default."""
        return gauss_bm_levels(horizon)

    @classmethod
    @abstractmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """L2 change of everything the counters release-generate when m counters change by 1 at one step."""

    @classmethod
    @abstractmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """Memory model: bytes of state per counter (``memory_bytes`` is n times this)."""

    @classmethod
    def counter_bytes(cls, horizon: int, count_bytes: int, source: NodeNoise) -> int:
        """Memory model: bytes of state per counter with noise source ``source`` (the source's layout)."""
        return int(cls.noise_of(source.name).bytes_per_counter(cls, horizon, count_bytes))

    @classmethod
    def source_of(cls, args: dict[str, Any]) -> NodeNoise:
        """The noise source of a counter built with the arguments ``args`` (``node_noise``; the default when absent)."""
        return cls.noise_of(args.get("node_noise")).source

    @classmethod
    def working_bytes(cls, horizon: int, source: NodeNoise | None = None) -> int:
        """Memory model: peak bytes of the tables built to calibrate and report variances (0: none sized by T).

        ``source``: the noise source the counter runs (None: the default), for a class whose tables depend on it.
        """
        return 0

    @abstractmethod
    def _allocate(self) -> None:
        """Create the state arrays and ``state``, their NamedTuple."""

    @abstractmethod
    def noise_count(self, steps: np.ndarray) -> int:
        """How many N(0, sigma^2) draws one push at each of ``steps`` consumes, in all."""

    @abstractmethod
    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Released prefix sums (float64) of ``cells``, each at its current step ``steps``."""

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Released prefix sums of every counter, at steps ``steps`` (shape (n,))."""
        return self.release(np.arange(self.n), steps)

    def release_wanted(self, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """``release_all(steps)`` at the cells where the bool mask ``wanted`` (n,) is set; the others may be NaN."""
        return self.release_all(steps)

    @abstractmethod
    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """What this counter's Gaussian noise protects, from noiseless ``increments`` (n, S) up to ``steps`` (n,).

        The sensitivity probe (``dpstream.audit.sensitivity``) measures the largest L2 change of this vector
        between neighbouring inputs against ``l2_sensitivity``: shape (1, -1).
        """

    def factorisation(self) -> Factorisation:
        """The factorisation A = B C the counter runs (``counters.factorisation``), with its horizon and parameters.

        A counter defined outside the package may leave it out and override ``variance`` instead.
        """
        raise NotImplementedError(f"{type(self).__name__} names no factorisation: override variance or factorisation")

    @property
    def draw_variance(self) -> float:
        """The variance of one noise draw at the held scale (``source.draw_variance``).

        (sigma kappa)^2 for Gaussian noise, 2 (b kappa)^2 for Laplace.
        """
        return self.source.draw_variance(self._noise_scale)

    def variance(self, steps: np.ndarray | int) -> np.ndarray:
        """Analytic noise variance of a release at each step: the factorisation's row norms times ``draw_variance``."""
        return self.factorisation().variance(steps, self.draw_variance)

    @property
    def privacy_delta(self) -> float:
        """The delta of the guarantee the noise gives: ``delta`` (0 for a pure-DP counter, whatever it was given)."""
        return self.delta

    @property
    def privacy_map(self) -> PrivacyMap:
        """The held noise N(0, sigma^2) at the counter's L2 sensitivity, under its calibration (``GaussianMap``)."""
        return GaussianMap(self.l2_sensitivity(self.horizon, self.m), self._noise_scale, self.calibration)

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, ``privacy_delta``) for m-neighbouring counter arrays, epsilon from ``privacy_map``."""
        return self.privacy_map.statement(self.privacy_delta, Relation.M_NEIGHBOURING_COUNTERS, self.notion,
                                          getattr(self, "sampler_delta", 0.0))

    @property
    def steps(self) -> np.ndarray:
        """Each counter's step (counters that track them)."""
        return self._steps.copy()

    @property
    def memory_bytes(self) -> int:
        """Bytes of the state arrays and the step counts."""
        return sum(a.nbytes for a in self._state_arrays().values())

    # -- serialisation hooks (``dpstream.serial``) -------------------------------------------------------------
    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The live mutable state arrays by name: ``state``'s fields and the step counts.

        The one place that maps the counter's state onto the written arrays (read back by the inherited
        ``_restore_arrays``, which copies into these same live arrays after checking names, shapes and dtypes, so
        ``state`` stays valid).
        """
        return {**self.state._asdict(), "steps": self._steps}

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        super()._restore_arrays(arrays)
        if np.any(self._steps < 0) or np.any(self._steps > self.horizon):
            raise ValueError(f"corrupt state: {type(self).__name__} steps outside [0, horizon={self.horizon}]")

    @classmethod
    def names_noise(cls) -> bool:
        """Whether states (``to_bytes``) and the descriptor's label name the node noise: if the class takes several."""
        return len(cls.NOISES) > 1

    def _serial_args(self) -> dict[str, Any]:
        """``Counter``'s arguments, the factorisation's (``_factorisation_args``), ``node_noise`` (``names_noise``)."""
        args = {"n": self.n, "horizon": self.horizon, "epsilon": self.epsilon, "delta": self.delta, "m": self.m,
                "calibration": self.calibration, "count_dtype": np.dtype(self.count_dtype).name,
                "kappa": self.kappa, **self._factorisation_args()}
        return {**args, "node_noise": self.node_noise} if self.names_noise() else args

    def _factorisation_args(self) -> dict[str, Any]:
        """Arguments of the factorisation beside ``Counter``'s (``arity``): none."""
        return {}

    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> Self:
        dtype, calibration = args["count_dtype"], args["calibration"]
        if dtype not in COUNT_DTYPES or calibration not in CALIBRATIONS:
            raise ValueError(f"count_dtype={dtype!r}, calibration={calibration!r}; allowed: {COUNT_DTYPES} and "
                             f"{CALIBRATIONS}")
        multiplier = args["kappa"]
        if not isinstance(multiplier, float) or not 0.0 <= multiplier <= 1.0:
            raise ValueError(f"kappa={multiplier!r}; allowed: a float in [0, 1]")
        with noise_mode("numpy"):  # the stored mode is restored with the generator state
            return cls(**{**args, "count_dtype": np.dtype(dtype).type})

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        if args["count_dtype"] not in COUNT_DTYPES:  # checked before numpy parses the name (``np.dtype(",")``)
            raise ValueError(f"count_dtype={args['count_dtype']!r}; allowed: {COUNT_DTYPES}")
        count_bytes = np.dtype(args["count_dtype"]).itemsize
        source = cls.source_of(args)
        return serial.size_arg(args, "n") * cls.counter_bytes(args["horizon"], count_bytes, source) + source.key_bytes

    @classmethod
    def _working_bytes(cls, args: dict[str, Any]) -> int:
        return cls.working_bytes(serial.size_arg(args, "horizon"), cls.source_of(args))

    def _constants(self) -> dict[str, Any]:
        """Values recomputed from the arguments that a restored counter must reproduce exactly (JSON)."""
        return {"sigma": self.sigma}

    def _state_scalars(self) -> dict[str, Any]:
        """The noise generator (``serial.noise_state``) and ``_constants``."""
        return {**serial.noise_state(self._noise), **self._constants()}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """Check the recomputed ``_constants`` against the written ones, then restore the noise generator."""
        for name, value in self._constants().items():
            serial.check_same(name, scalars.get(name), value)
        serial.restore_noise(self._noise, scalars)

    def draw(self, size: int) -> np.ndarray:
        """``size`` noises N(0, (sigma * kappa)^2), in the order the pushes consume them."""
        return self._noise.gaussian(self._noise_scale, size)

    def push(self, cells: np.ndarray, steps: np.ndarray, values: np.ndarray) -> None:
        """Cells ``cells[k]``, in order, take steps ``steps[k]`` with increments ``values[k]`` (int64 arrays)."""
        loop = kernels.push_many(self.kind, self.push_kernel)
        derived = self.sparse_pushes and self.kind != kernels.EXTERNAL  # another package's kernel may still draw
        noise = _NO_DRAWS if derived else self.draw(self.noise_count(steps))
        loop(cells, steps, values, noise, *self.state)
        self.record_steps(steps, cells)

    def record_steps(self, steps: np.ndarray, cells: np.ndarray | None = None) -> None:
        """Counters that track their steps note that ``cells`` (default: all) are now at ``steps``."""
        if not self.tracks_steps:
            return
        if cells is None:
            self._steps[:] = steps
        else:
            np.maximum.at(self._steps, cells, steps)


class FactorisedCounter(Counter):
    """A factorisation whose noise comes from the source chosen of its ``NOISES`` (``node_noise=``).

    The source (``tree_noise``, ``discrete``; kept as ``nodes``) says when the noise is drawn and what it adds to the
    state; the factorisation gives its layouts: stored noise (``stored_kind``, ``_allocate_stored``,
    ``stored_noise_count``, ``stored_release``), drawn at push into the factorisation's own sums, and noise derived
    at release from a key (``_allocate_derived``, ``derived_release``), a function of the exact counts.
    """

    stored_kind: ClassVar[int]
    """The compiled push of the stored layout (``_kernels``)."""
    stored_draws: ClassVar[int] = 1
    """Noise draws per push of the stored layout, on average (buffer sizing)."""
    stored_tracks_steps: ClassVar[bool] = False
    """Whether the stored layout keeps each counter's step."""
    cached_releases: ClassVar[bool] = True
    """Whether whole-table releases of derived noise may keep a cache (``partial_release``)."""
    nodes: Any
    """The source's handler (of ``NOISES``): it keeps no state, the arrays live on the counter."""
    # set by the source when it allocates (``tree_noise``): derived noise's exact counts and key
    _exact: np.ndarray
    _key: np.ndarray

    def _allocate(self) -> None:
        self.nodes.allocate(self)

    def _allocate_stored(self) -> None:
        """The stored layout's state arrays and ``state``."""
        raise NotImplementedError(f"{type(self).__name__} has no stored layout")

    def _allocate_derived(self) -> None:
        """Tables derived noise reads beside the exact counts and the key (none)."""

    def stored_noise_count(self, steps: np.ndarray) -> int:
        """Draws a push at each of ``steps`` consumes in the stored layout: one each."""
        return int(np.size(steps))

    def stored_release(self, cells: np.ndarray | slice) -> np.ndarray:
        """Release of the stored layout at ``cells`` (its state holds every counter's current release)."""
        raise NotImplementedError(f"{type(self).__name__} has no stored layout")

    def stored_release_all(self) -> np.ndarray:
        """Every counter's stored release: ``stored_release`` of whole rows (a slice: no gather of every cell)."""
        return self.stored_release(slice(None))

    def derived_release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the key-derived noise of ``cells`` at ``steps`` (a source that leaves it to the class)."""
        raise NotImplementedError(f"{type(self).__name__} derives its noise in its source")

    def derived_release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's derived release at ``steps``."""
        return self.derived_release(np.arange(self.n), steps)

    def _checked_steps(self, steps: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """``steps`` broadcast to ``shape``, contiguous int64, or an error when one lies outside [0, horizon]."""
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), shape))
        if steps.size and (steps.min() < 0 or steps.max() > self.horizon):
            raise ValueError(f"steps must lie in [0, horizon={self.horizon}], got [{steps.min()}, {steps.max()}]")
        return steps

    def draw(self, size: int) -> np.ndarray:
        """``size`` noises, in the order the pushes consume them (the source's)."""
        return self.nodes.draw(self, size)

    def noise_count(self, steps: np.ndarray) -> int:
        """Draws a push at each of ``steps`` consumes: the stored layout's, none for derived noise."""
        return self.nodes.noise_count(self, steps)

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Released prefix sums of ``cells`` at ``steps`` (stored: the stored sums; derived: regenerated)."""
        cells = np.asarray(cells, dtype=np.int64)
        return self.nodes.release(self, cells, np.broadcast_to(np.asarray(steps, dtype=np.int64), cells.shape))

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's release at ``steps`` (derived noise: with the source's cache).

        Stored trees return their live read-only view of the released sums (``BinaryTree.released_view``): it
        changes with later pushes, so copy it to keep it.
        """
        return self.nodes.release_all(self, steps)

    def release_wanted(self, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """``release_all`` at the cells ``wanted`` (bool, (n,)); the others may be NaN."""
        return self.nodes.release_wanted(self, steps, wanted)

    @property
    def privacy_map(self) -> PrivacyMap:
        """The held noise at the factorisation's sensitivity (the source's: Gaussian, or discrete Gaussian)."""
        return self.nodes.privacy_map(self)

    @property
    def noise_cache_bytes(self) -> int:
        """Bytes of a speed cache of whole-table releases (0 without one, or before the first)."""
        return self.nodes.noise_cache_bytes(self)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the state (the source's count)."""
        return self.nodes.memory_bytes(self)

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._state_arrays(), **self.nodes.state_arrays(self)}

    def _state_scalars(self) -> dict[str, Any]:
        return {**super()._state_scalars(), **self.nodes.state_scalars(self)}

    def _constants(self) -> dict[str, Any]:
        return {**super()._constants(), **self.nodes.constants(self)}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """The source's checks (a state it cannot continue is refused), then ``Counter``'s.

        The arrays were checked first (``fixed_arrays``): a state of another source fails on them, by name.
        """
        self.nodes.restore_scalars(self, scalars)
        super()._restore_scalars(scalars)
        self.nodes.scalars_restored(self)

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        super()._restore_arrays(arrays)
        self.nodes.arrays_restored(self)
