"""The one sketch core shared by CMS / CS and their Punctual / Lazy private versions.

Two independent choices make a sketch (Holland, Sec. 2.2 and 4):

- the *estimator*: CMS adds 1 and answers with the min over rows; CS adds the sign g_i(x) and
  answers with the median over rows of g_i(x) times the cell (Alg. 4);
- the *push schedule*: how the d x w cells released to the public are maintained: exact counters
  (non-private), every cell a continual counter stepped at every item (Punctual, Alg. 3), or an exact
  pending array pushed one column per step into counter cells (Lazy, Alg. 5).

A private schedule's cells are one ``dpstream.counters.Counter`` of d*w counters, chosen by ``counter``
and ``node_noise`` (default: the paper's binary tree with stored nodes, GaussBM). The core hashes keys,
enforces the horizon, and implements ``query`` from the schedule's released cells (compiled:
``_kernels.query_keys`` reads the d cells of each key); a schedule only keeps its arrays, the steps of
its cells, and runs its compiled kernel.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Self

import numpy as np

from dpstream import serial
from dpstream.counters import CounterDescriptor, counter_class
from dpstream.hashing import bucket_many, canonical_key, canonical_keys, draw_hash_params
from dpstream.intervals import Interval, clipped, laplace_rows_halfwidth, rows_halfwidth
from dpstream.noise import SeedLike, as_seed_sequence, child_seed, noise_mode
from dpstream.privacy.calibration import cell_neighbour_m
from dpstream.privacy.maps import with_relation
from dpstream.privacy.statement import Certified, Privacy, Relation
from dpstream.sketches import _kernels as kernels
from dpstream.sketches import memory
from dpstream.sketches.estimators import ESTIMATORS, trimmed_mean
from dpstream.validation import check_allocation, check_choice, check_delta, check_epsilon, check_positive_int


@dataclass(frozen=True)
class Estimator:
    """``signed``: Count Sketch (row increment g_i(x), median over rows); else Count-Min (1, min over rows)."""

    signed: bool


@dataclass(frozen=True)
class Variant:
    """Beyond-the-paper choices (defaults: the paper's).

    The cells' counter and node noise (``dpstream.counters``), the Gaussian calibration
    (``calibration.CALIBRATIONS``), the hash family (``hashing.HASH_FAMILIES``) and the estimator over rows
    (``estimators.ESTIMATORS``: post-processing).
    """

    counter: str = "binary"
    node_noise: str = "stored"
    calibration: str = "classic"
    hash_family: str = "modp"
    estimator: str = "alg4"


UNBOUNDED = 2**62  # the horizon of a non-private sketch given none: any stream length, int64 counts
PARTIAL_QUERY_HASHES = 1 << 20  # (key, row) pairs up to which a query hashes once (16 MB) and releases the cells read
COUNT_MIN = Estimator(signed=False)
COUNT_SKETCH = Estimator(signed=True)


class Schedule(ABC):
    """State of the released d x w cells and the kernel that pushes a block of keys into them.

    ``signed``: the estimator's row increments are g_i(x) (Count Sketch) rather than 1 (Count-Min); it selects
    the kernels' increments and, for private schedules, the cells' neighbour count m.
    """

    kind: ClassVar[memory.Schedule]
    private: ClassVar[bool]

    def __init__(
        self,
        width: int,
        depth: int,
        horizon: int,
        signed: bool,
        epsilon: float | None,
        delta: float | None,
        noise_seed: np.random.SeedSequence | None,
        kappa: float,
        counter: CounterDescriptor,
        calibration: str,
    ) -> None:
        """Store the dimensions and the count dtype, then create the state arrays (``_allocate``)."""
        self.width, self.depth, self.horizon, self.signed = width, depth, horizon, signed
        self.count_dtype = np.int32 if memory.count_bytes(horizon) == 4 else np.int64
        self.t = 0
        self.calibration = calibration
        self._allocate(epsilon, delta, noise_seed, kappa, counter)

    @abstractmethod
    def _allocate(
        self,
        epsilon: float | None,
        delta: float | None,
        noise_seed: np.random.SeedSequence | None,
        kappa: float,
        counter: CounterDescriptor,
    ) -> None:
        """Create the state arrays (``counter``: the counter of a private schedule's cells, ``counter_class``)."""

    @abstractmethod
    def extend(self, keys: np.ndarray, params: np.ndarray, t0: int) -> None:
        """Process canonical ``keys`` as stream items t0, t0 + 1, ... (t counted from 0); then ``t`` = t0 + len."""

    @abstractmethod
    def cells(self) -> np.ndarray:
        """The released (d, w) cell values (a view of the state: read it before the next update)."""

    @abstractmethod
    def cell_variances(self, t: int | None = None) -> np.ndarray:
        """Analytic noise variance of every released cell after ``t`` items (default: now), shape (d, w)."""

    @property
    @abstractmethod
    def memory_bytes(self) -> int:
        """Bytes of the state arrays."""

    @abstractmethod
    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The live state arrays, by name (``serial``)."""

    def _state_scalars(self) -> dict[str, Any]:
        """JSON state besides the arrays (``serial``)."""
        return {"t": self.t}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """Set what ``_state_scalars`` returned."""
        self.t = scalars["t"]

    def add(self, other: Schedule) -> None:
        """Add ``other``'s cells to these (``SketchCore.merge``); only exact cells can be added."""
        raise TypeError(f"{type(self).__name__} cells cannot be added")


class PrivateSchedule(Schedule):
    """The released cells are d*w counters over cell_horizon steps each (``counter``: GaussBM's binary tree by default).

    Privacy: (epsilon, delta)-DP for m-neighbouring inputs (Thm 1, Sec. 4), with
    m = ``calibration.cell_neighbour_m(signed, d)``: 2d for Count-Min, 4d for Count Sketch.

    A replace-one neighbour changes, in each row i, the pushed increment of cell h_i(x) (loses x) and of
    cell h_i(x') (gains x') at one step each: two cells by 1 (squared L2 change 2 per row), or for Count
    Sketch with h_i(x) = h_i(x') and g_i(x) = -g_i(x') one cell by 2 (squared change 4 per row). The
    paper's Thm 2 uses m = 2d for both; 4d for CS is our erratum (see ``cell_neighbour_m``).
    """

    private = True

    @abstractmethod
    def cell_horizon(self) -> int:
        """How many steps each cell's counter sees."""

    @abstractmethod
    def cell_steps(self, t: int | None = None) -> np.ndarray:
        """Each cell's step (how many pushes it has had) after ``t`` items (default: now), shape (d w,)."""

    def _allocate(
        self,
        epsilon: float | None,
        delta: float | None,
        noise_seed: np.random.SeedSequence | None,
        kappa: float,
        counter: CounterDescriptor,
    ) -> None:
        self.counters = counter(
            n=self.depth * self.width,
            horizon=self.cell_horizon(),
            epsilon=check_epsilon(epsilon),
            delta=check_delta(delta),
            # L1 (pure DP, Laplace nodes): a colliding cell's change of 2 counts as 2 unit changes, so 2d for both
            m=2 * self.depth if counter.notion == "pure" else cell_neighbour_m(self.signed, self.depth),
            seed=noise_seed,
            calibration=self.calibration,
            count_dtype=self.count_dtype,
            kappa=kappa,
        )

    def cells(self, wanted: np.ndarray | None = None) -> np.ndarray:
        """The counters' releases at the cells' current steps, shape (d, w).

        ``wanted``: bool mask (d w,) of the cells the caller reads; the counters may leave the others NaN
        (``Counter.release_wanted``).
        """
        steps = self.cell_steps()
        released = self.counters.release_all(steps) if wanted is None else self.counters.release_wanted(steps, wanted)
        return released.reshape(self.depth, self.width)

    def cell_variances(self, t: int | None = None) -> np.ndarray:
        """The counters' analytic noise variances at the cells' steps after ``t`` items (default: now), (d, w)."""
        return self.counters.variance(self.cell_steps(t)).reshape(self.depth, self.width)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the counters' state arrays."""
        return self.counters.memory_bytes

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return serial.nest("cells", self.counters._state_arrays())

    def _state_scalars(self) -> dict[str, Any]:
        return {**super()._state_scalars(), **self.counters._state_scalars()}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        super()._restore_scalars(scalars)
        self.counters._restore_scalars(scalars)


PRIVATE_MERGE = (
    "merge is refused for private sketches: each sketch's continual-observation noise (its counters' tree or BLT "
    "state and its noise generator) belongs to its own stream and time line. Adding two released states is "
    "post-processing of two private releases, but the sum cannot keep updating as ONE mechanism with the stated "
    "(epsilon, delta): the counters' node boundaries (and Lazy's push schedule) of the two streams do not line up "
    "and the summed noise is not the noise of any calibrated counter. Query each sketch and add the estimates "
    "instead (post-processing; each keeps its own guarantee)."
)


class SketchCore(Certified, serial.Serialisable):
    """A d x w frequency sketch: ``_estimator`` and ``_schedule`` are set by each public class.

    ``to_bytes`` / ``from_bytes`` (``serial``) save and restore the exact state (the bytes are SECRET: noise
    generator state, Philox key, exact counts); ``merge`` adds two non-private sketches.
    """

    _estimator: ClassVar[Estimator]
    _schedule: ClassVar[type[Schedule]]
    _repr_attrs: ClassVar[dict[str, str]] = {"hash_family": "variant.hash_family", "estimator": "variant.estimator"}
    fixed_arrays = True

    def __init__(
        self,
        *,
        width: int,
        depth: int,
        epsilon: float | None = None,
        delta: float | None = None,
        horizon: int | None = None,
        seed: SeedLike = None,
        counter: str = "binary",
        node_noise: str = "stored",
        calibration: str = "classic",
        hash_family: str = "modp",
        estimator: str = "alg4",
    ) -> None:
        """Validate the dimensions, draw the hash parameters and build the schedule with the full noise.

        ``counter``, ``node_noise``, ``calibration``, ``hash_family`` and ``estimator`` are the beyond-the-paper
        ``Variant``.
        """
        self._setup(width, depth, epsilon, delta, horizon, seed,
                    Variant(counter, node_noise, calibration, hash_family, estimator), kappa=1.0)

    @classmethod
    def _uncertified_noiseless(
        cls,
        *,
        width: int,
        depth: int,
        epsilon: float | None = None,
        delta: float | None = None,
        horizon: int | None = None,
        seed: SeedLike = None,
        counter: str = "binary",
        node_noise: str = "stored",
        calibration: str = "classic",
        hash_family: str = "modp",
        estimator: str = "alg4",
    ) -> Self:
        """TEST ONLY, NOT privacy-certified: the same sketch (same hashes) with the privacy noise switched off.

        The result has ``certified == False``; public constructors always add the full noise.
        """
        self = cls.__new__(cls)
        self._setup(width, depth, epsilon, delta, horizon, seed,
                    Variant(counter, node_noise, calibration, hash_family, estimator), kappa=0.0)
        return self

    def _setup(
        self,
        width: int,
        depth: int,
        epsilon: float | None,
        delta: float | None,
        horizon: int | None,
        seed: SeedLike,
        variant: Variant,
        kappa: float,
    ) -> None:
        self.width = check_positive_int(width, "width")
        self.depth = check_positive_int(depth, "depth")
        check_choice(variant.estimator, "estimator", ESTIMATORS)
        cells = counter_class(variant.counter, variant.node_noise)  # names an unknown counter or node noise
        self.horizon = self._horizon(horizon)
        self.epsilon, self.delta = epsilon, delta
        self.variant = variant
        self.kappa = kappa
        self.counter, self.node_noise, self.calibration = variant.counter, variant.node_noise, variant.calibration
        # exact discrete noise keyed from OS entropy (no seed): the only noise fit to deploy (docs/secure-noise.md)
        secure_key = variant.node_noise.startswith("discrete_secure") and seed is None
        self.deployable = self.certified and secure_key
        needed = memory.sketch_bytes(self._schedule.kind, np.array([self.width]), self.depth, self.horizon, "actual",
                                     cells, variant.hash_family)[0]
        check_allocation(float(needed), f"{type(self).__name__}(width={self.width}, depth={self.depth})")
        root = as_seed_sequence(seed)
        self._params = draw_hash_params(self.depth, child_seed(root, 0), variant.hash_family)
        self._state = self._schedule(
            self.width,
            self.depth,
            self.horizon,
            self._estimator.signed,
            epsilon,
            delta,
            None if secure_key else child_seed(root, 1),
            kappa,
            cells,
            variant.calibration,
        )
        self.t = 0

    @classmethod
    def _horizon(cls, horizon: int | None) -> int:
        """The validated stream length; a non-private sketch needs none (``UNBOUNDED``, int64 counts)."""
        if horizon is None and not cls._schedule.private:
            return UNBOUNDED
        if horizon is None:
            raise ValueError(f"{cls.__name__} needs horizon (the stream length its noise is calibrated for), got None")
        return check_positive_int(horizon, "horizon")

    @classmethod
    def from_memory(
        cls,
        *,
        kilobytes: float,
        depth: int,
        epsilon: float | None = None,
        delta: float | None = None,
        horizon: int | None = None,
        seed: SeedLike = None,
        model: memory.Model = "paper",
        counter: str = "binary",
        node_noise: str = "stored",
        calibration: str = "classic",
        hash_family: str = "modp",
        estimator: str = "alg4",
    ) -> Self:
        """The widest sketch that fits ``kilobytes`` (KB = 1000 bytes) under the memory model ``model``.

        "paper" (Holland, Sec. 6.4, inferred; gives widths 2000 / 55 / 33 for CMS / Lazy / Punctual at
        24 KB, d = 3, T = 2^20): CMS / CS 4 bytes per cell; a private cell 12 bytes per tree level, with
        floor(log2 T) levels (Punctual) or floor(log2(T / (d w))) levels (Lazy, solved as the largest
        fixed point in w). "actual": the bytes ``memory_bytes`` reports, i.e. the levels really allocated
        (ceil(log2(T + 1)) for Punctual, ceil(log2(ceil(T / w) + 1)) for Lazy: 21 and 15 at T = 2^20,
        w = 55), step counts, Lazy's pending array and the hash parameters; see ``sketches.memory``.
        Any other ``counter`` / ``node_noise`` than the paper's needs ``model="actual"`` (its own bytes,
        ``Counter.bytes_per_counter``). Raises ``ValueError`` naming the memory and the minimum when not one
        column fits.
        """
        check_epsilon(kilobytes, "kilobytes")
        depth = check_positive_int(depth, "depth")
        horizon = cls._horizon(horizon)
        check_choice(model, "model", memory.MODELS)
        cells = counter_class(counter, node_noise)
        width = memory.width_for_memory(cls._schedule.kind, kilobytes, depth, horizon, model, cls.__name__, cells,
                                        hash_family)
        return cls(width=width, depth=depth, epsilon=epsilon, delta=delta, horizon=horizon, seed=seed,
                   counter=counter, node_noise=node_noise, calibration=calibration, hash_family=hash_family,
                   estimator=estimator)

    @property
    def private(self) -> bool:  # type: ignore[override]  # fixed by the schedule
        """Whether the released cells are differentially private (never for CMS / CS: ``certified`` False)."""
        return self._schedule.private

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta) under replace-one neighbouring streams (continual observation); None when non-private.

        Its notion is the cells' counter's (computational with derived node noise,
        ``counters.BinaryTree(node_noise="derived")``).
        """
        if not isinstance(self._state, PrivateSchedule):
            return None
        return with_relation(self._state.counters.privacy, Relation.REPLACE_ONE_ITEM)

    @property
    def memory_bytes(self) -> int:
        """Bytes of all arrays held: cells / tree nodes, step counts, pending P, hash parameters."""
        return self._state.memory_bytes + self._params.nbytes

    def update(self, x: int | str | bytes) -> None:
        """Process one stream item."""
        self._push(np.array([canonical_key(x)], dtype=np.uint64))

    def extend(self, items: np.ndarray) -> None:
        """Process ``items`` in order: exactly the state that ``update`` on each item would give."""
        self._push(canonical_keys(items))

    def _push(self, keys: np.ndarray) -> None:
        t = self.t + keys.shape[0]
        if t > self.horizon:
            raise ValueError(f"stream length t={t} would exceed horizon={self.horizon} of this {type(self).__name__}")
        self._state.extend(keys, self._params, self.t)
        self.t = self._state.t = t

    def _rows(self, keys: np.ndarray, table: np.ndarray) -> np.ndarray:
        """``table[i, h_i(x)]`` (times g_i(x) for CS) for every row i and key x: shape (d, n), float64."""
        cols, signs = bucket_many(self._params, keys, self.width)
        rows = table[np.arange(self.depth)[:, None], cols].astype(np.float64)
        return rows * signs if self._estimator.signed else rows

    def row_estimates_many(self, xs: np.ndarray) -> np.ndarray:
        """Per-row estimates v_i of Alg. 4 for every key, shape (depth, len(xs))."""
        return self._rows(canonical_keys(xs), self._state.cells())

    def query_many(self, xs: np.ndarray, *, clip: bool = False) -> np.ndarray:
        """Frequency estimates of ``xs`` (Alg. 4: min over rows for CMS, median for CS), float64.

        ``clip``: each estimate clipped to [0, t], the range of a count after t items (post-processing: no privacy
        cost); the raw estimate otherwise.
        """
        estimates = self._query_keys(canonical_keys(xs))
        return np.clip(estimates, 0, self.t) if clip else estimates

    def query(self, x: int | str | bytes, *, clip: bool = False) -> float:
        """Frequency estimate of one key (Alg. 4); ``clip`` as in ``query_many``."""
        estimate = float(self._query_keys(np.array([canonical_key(x)], dtype=np.uint64))[0])
        return min(max(estimate, 0.0), float(self.t)) if clip else estimate

    def query_interval_many(self, xs: np.ndarray, confidence: float = 0.95, *, clip: bool = False) -> Interval:
        """Estimates of ``xs`` with intervals covering the privacy noise (``dpstream.intervals``): arrays.

        Each interval holds, with probability at least ``confidence``, what this sketch would answer without its
        noise (the same hashes and pushes): not the collision bias (Count-Min: upward; Count Sketch: either sign)
        nor the lazy lag (downward). ``clip``: estimates and ends clipped to [0, t]. Alg. 4's estimator only.
        """
        keys = canonical_keys(xs)
        estimates = self._query_keys(keys)
        half = self._halfwidths(keys, confidence, self.t)
        interval = Interval(estimates, estimates - half, estimates + half)
        return clipped(interval, 0, self.t) if clip else interval

    def _halfwidths(self, keys: np.ndarray, confidence: float, t: int) -> np.ndarray:
        """Half-widths of the keys' intervals for the release after ``t`` items (``dpstream.intervals``).

        The normal quantile, or for Laplace node noise the Chernoff bound of a sum of nodes.
        """
        if self.variant.estimator != "alg4":
            raise ValueError(f"intervals are stated for estimator='alg4' (min / median over rows), not "
                             f"estimator={self.variant.estimator!r}")
        variances = np.abs(self._rows(keys, self._state.cell_variances(t)))
        counters = getattr(self._state, "counters", None)
        if counters is not None and counters.source.distribution in ("laplace", "discrete_laplace"):
            # a sum of Laplace nodes: its tails are heavier than the normal quantile assumes
            return laplace_rows_halfwidth(variances, confidence, counters.draw_variance, counters.node_log_mgf,
                                          counters._noise_scale)
        return rows_halfwidth(variances, confidence)

    def query_interval(self, x: int | str | bytes, confidence: float = 0.95, *, clip: bool = False) -> Interval:
        """One key's estimate and interval (floats), as ``query_interval_many``."""
        many = self.query_interval_many(np.array([canonical_key(x)], dtype=np.uint64), confidence, clip=clip)
        return Interval(*(float(np.asarray(v)[0]) for v in many))

    def _query_keys(self, keys: np.ndarray) -> np.ndarray:
        if self.variant.estimator == "trimmed_mean":
            cells = self._state.cells()
            variances = np.abs(self._rows(keys, self._state.cell_variances()))
            return trimmed_mean(self._rows(keys, cells), variances, self._estimator.signed)
        signed = self._estimator.signed
        counters = getattr(self._state, "counters", None)
        if counters is not None and counters.partial_release and keys.size * self.depth <= PARTIAL_QUERY_HASHES:
            # derived node noise: release only the cells the keys read (the others' nodes are not generated)
            cols, incs, wanted = kernels.hash_keys(keys, self._params, signed, self.depth, self.width)
            cells = self._state.cells(wanted)  # type: ignore[call-arg]  # a PrivateSchedule: it has counters
            return kernels.query_hashed(cols, incs, signed, cells)
        return kernels.query_keys(keys, self._params, signed, self._state.cells())

    def variance_many(self, xs: np.ndarray) -> np.ndarray:
        """Analytic noise variance of each row estimate v_i, shape (depth, len(xs)); 0 when non-private."""
        return np.abs(self._rows(canonical_keys(xs), self._state.cell_variances()))

    def variance(self, x: int | str | bytes) -> np.ndarray:
        """Analytic noise variance of each row estimate v_i of ``x``, shape (depth,)."""
        keys = np.array([canonical_key(x)], dtype=np.uint64)
        return np.abs(self._rows(keys, self._state.cell_variances()))[:, 0]

    def merge(self, other: SketchCore) -> Self:
        """The sketch of this stream followed by ``other``'s stream, for the NON-private CMS / CS.

        Cells add, t adds (both sketches unchanged). Needs the same class, width, depth, horizon and hash parameters
        (the same seed and ``hash_family``) and t + other.t <= horizon; ``ValueError`` naming the mismatch otherwise.
        Private sketches raise ``ValueError`` (``PRIVATE_MERGE`` says why).
        """
        if not isinstance(other, SketchCore):
            raise TypeError(f"can only merge a sketch, got {type(other).__name__}")
        if self.private or other.private:
            raise ValueError(PRIVATE_MERGE)
        if type(other) is not type(self):
            raise ValueError(f"cannot merge a {type(other).__name__} into a {type(self).__name__}")
        for name in ("width", "depth", "horizon"):
            if getattr(self, name) != getattr(other, name):
                raise ValueError(f"cannot merge: {name}={getattr(self, name)} here, {getattr(other, name)} in other")
        if self.variant.hash_family != other.variant.hash_family:
            raise ValueError(f"cannot merge: hash_family={self.variant.hash_family!r} here, "
                             f"{other.variant.hash_family!r} in other")
        if not np.array_equal(self._params, other._params):
            raise ValueError("cannot merge: the hash parameters differ (build both sketches with the same seed)")
        t = self.t + other.t
        if t > self.horizon:
            raise ValueError(f"cannot merge: t = {self.t} + {other.t} = {t} would exceed horizon={self.horizon}")
        merged = copy.deepcopy(self)
        merged._state.add(other._state)
        merged.t = merged._state.t = t
        return merged

    # -- serialisation hooks (``serial``) --------------------------------------------------------------------
    def _serial_args(self) -> dict[str, Any]:
        eps, delta = (None if v is None else float(v) for v in (self.epsilon, self.delta))  # numpy floats too
        return {"width": self.width, "depth": self.depth, "epsilon": eps, "delta": delta,
                "horizon": self.horizon, **asdict(self.variant), "kappa": self.kappa}

    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> Self:
        self = cls.__new__(cls)
        variant = Variant(args["counter"], args["node_noise"], args["calibration"], args["hash_family"],
                          args.get("estimator", "alg4"))  # a state without the key: the default, Alg. 4
        if args["kappa"] not in (0.0, 1.0) or not isinstance(args["kappa"], float):
            raise ValueError(f"kappa={args['kappa']!r}; allowed: 1.0, 0.0 (test only)")
        with noise_mode("numpy"):  # the stored mode is restored with the generator state
            self._setup(args["width"], args["depth"], args["epsilon"], args["delta"], args["horizon"], None, variant,
                        kappa=args["kappa"])
        self._restored()
        return self

    def _restored(self) -> None:
        """Never deployable once restored: bytes cannot show where a key came from (docs/secure-noise.md)."""
        self.deployable = False
        if isinstance(self._state, PrivateSchedule) and hasattr(self._state.counters, "deployable"):
            self._state.counters.deployable = False

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        """The "actual" memory model (``memory.sketch_bytes``) in Python integers: no overflow whatever the sizes."""
        width, depth, horizon = (serial.size_arg(args, name) for name in ("width", "depth", "horizon"))
        cells = counter_class(args["counter"], args["node_noise"])
        count = memory.count_bytes(horizon)
        kind = cls._schedule.kind
        if kind == "exact":
            per_cell = count
        else:
            steps = horizon if kind == "punctual" else -(-horizon // width)
            per_cell = cells.bytes_per_counter(steps, count) + (count if kind == "lazy" else 0)
        return per_cell * width * depth + memory.hash_bytes(depth, args["hash_family"]) + cells.fixed_bytes

    @classmethod
    def _working_bytes(cls, args: dict[str, Any]) -> int:
        width, horizon = serial.size_arg(args, "width"), serial.size_arg(args, "horizon")
        kind = cls._schedule.kind
        if kind == "exact":
            return 0
        steps = horizon if kind == "punctual" else -(-horizon // width)
        return counter_class(args["counter"], args["node_noise"]).working_bytes(steps)

    def _state_scalars(self) -> dict[str, Any]:
        return self._state._state_scalars()

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        self.t = serial.int_in(scalars["t"], "t", 0, self.horizon)
        self._state._restore_scalars(scalars)

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"hash_params": self._params, **self._state._state_arrays()}
