"""A versioned byte format (no pickle) for the state of every streaming object: sketches, trackers, counters, monitors.

Layout, little-endian::

    b"DPSTREAM" | format version (uint16) | header length (uint32) | header (UTF-8 JSON)
    | the arrays' raw C-order bytes, in the header's order | CRC-32 of everything before (uint32)

The header is ``{"class": name, "args": constructor arguments, "state": JSON scalars (t, the noise generator's
``bit_generator.state``, ...), "arrays": [[name, dtype, shape], ...]}``. Only numeric dtypes are written, and
reading never executes anything from the data (a counter named ``module:Class`` is restored only once its module
is imported). The checksum covers the prefix, the header and the arrays.

Reading refuses every defect with ``SerialError`` (a ``ValueError``) naming it: bytes without the magic, an
unsupported version, a header that is not exactly the structure above (types, non-negative integer shapes, known
numeric dtypes, unique names), a class name that is not a dpstream serialised class or not the one asked for,
truncated or trailing data, a bad checksum, arguments that would allocate more than ``ALLOCATION_SLACK`` times the
bytes given (checked BEFORE anything sized from the header is allocated), arguments that do not re-serialise to
themselves exactly (``true`` for 1, ``7.0`` for 7), and state that does not fit the arguments.

An object is ``Serialisable`` when it can rebuild itself from its arguments (``_serial_args`` / ``_rebuild``) and
lists its state in one place: ``_state_scalars`` (JSON values) and ``_state_arrays`` (the LIVE arrays, so the
default ``_restore_arrays`` copies the stored values into the fresh object's arrays after checking names, shapes
and dtypes); owners nest the state of their parts under a prefix (``nest`` / ``part``).
"""

from __future__ import annotations

import inspect
import json
import math
import struct
import sys
import zlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

import numpy as np

from dpstream.noise import NOISE_MODES, NoiseSource

MAGIC = b"DPSTREAM"
FORMAT_VERSION = 3
"""The version ``to_bytes`` writes."""
RENAMED: dict[int, dict[str, tuple[str, dict[str, Any]]]] = {}
"""By format version v, the class names v wrote that v + 1 reads as another class or with more arguments: the class
that reads them now and the arguments that say what the old class was (``rename``). Version 1 wrote a tree counter
class per node noise, version 2 the other counters' classes per noise and their one-source classes without
``node_noise``; from version 3 a counter class is its factorisation, taking ``node_noise``."""


def rename(old: str, new: str, version: int, **args: Any) -> None:
    """Read a format-``version`` state of class ``old`` as one of class ``new`` with the arguments ``args`` added."""
    RENAMED.setdefault(version, {})[old] = (new, args)


def _renamed_classes(version: int) -> Callable[[dict[str, Any], dict[str, np.ndarray]],
                                               tuple[dict[str, Any], dict[str, np.ndarray]]]:
    """Version ``version`` to the next: a renamed class's tag becomes its new class with what it stood for added.

    The arguments gain those ``RENAMED`` gives.
    """

    def migrate(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                               dict[str, np.ndarray]]:
        new, added = RENAMED.get(version, {}).get(header["class"], (header["class"], {}))
        return {**header, "class": new, "args": {**header["args"], **added}}, arrays

    return migrate


def _read_as(name: str, version: int) -> str:
    """The class that reads a state of class ``name`` written at format ``version`` (``RENAMED``)."""
    for v in range(version, FORMAT_VERSION):
        name = RENAMED.get(v, {}).get(name, (name, {}))[0]
    return name


MIGRATIONS: dict[int, Callable[[dict[str, Any], dict[str, np.ndarray]], tuple[dict[str, Any], dict[str, np.ndarray]]]]
MIGRATIONS = {1: _renamed_classes(1), 2: _renamed_classes(2)}
"""By older format version v: the function taking its (header, arrays) to those of version v + 1. Reading applies them
in turn up to ``FORMAT_VERSION``; a version below it with no migration is refused, naming how to migrate it."""
_PREFIX = struct.Struct("<8sHI")  # magic, version, header length
_CRC = struct.Struct("<I")
_NUMERIC_KINDS = "biuf"
_DTYPES = frozenset(np.dtype(t).newbyteorder("<").str for t in
                    (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                     np.float32, np.float64))
"""The dtype strings a header may name (little-endian, numeric)."""
ALLOCATION_SLACK = 2
ALLOCATION_ALLOWANCE = 1 << 20
"""A restore allocates at most ``ALLOCATION_SLACK * len(data) + ALLOCATION_ALLOWANCE`` bytes of state: every state
array is in the data, plus fixed tables (a tracker's universe) up to the allowance."""
WORKING_LIMIT = 1 << 30
"""Bytes of working tables a restore may build (the BLT counter's calibration tables grow with its horizon: 96 bytes
per step): arguments that need more are refused before anything is built. Raise it to restore such an object."""
REGISTRY: dict[str, type[Serialisable]] = {}
"""Every serialised class by the name written in the header (filled by ``Serialisable.__init_subclass__``)."""


class SerialError(ValueError):
    """Bytes that ``from_bytes`` refuses: the message names the defect."""


ArraySpec = tuple[str, np.dtype, tuple[int, ...]]
"""One entry of the header's array listing: name, dtype, shape."""


def pack(cls_name: str, args: Mapping[str, Any], state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> bytes:
    """The bytes of one object (see the module docstring)."""
    listing, blobs = [], []
    for name, arr in arrays.items():
        arr = np.asarray(arr)
        if arr.dtype.kind not in _NUMERIC_KINDS:
            raise TypeError(f"array {name!r} has dtype {arr.dtype}; only numeric arrays are serialised")
        listing.append([name, arr.dtype.newbyteorder("<").str, list(arr.shape)])
        blobs.append(np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes())
    header = json.dumps({"class": cls_name, "args": dict(args), "state": dict(state), "arrays": listing},
                        allow_nan=False).encode()
    body = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header)) + header + b"".join(blobs)
    return body + _CRC.pack(zlib.crc32(body))


def unpack(data: bytes, cls_name: str | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header, arrays) of bytes written by ``pack`` (for class ``cls_name`` when given); ``SerialError`` otherwise."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"from_bytes needs bytes, got {type(data).__name__}")
    data = bytes(data)
    end = _check_prefix(data)
    header, listing = _read_header(data, end, cls_name)
    sizes = [dtype.itemsize * math.prod(shape) for _, dtype, shape in listing]
    _check_body(data, end + sum(sizes) + _CRC.size)
    arrays, offset = {}, end
    for (name, dtype, shape), size in zip(listing, sizes, strict=True):
        arr = np.frombuffer(data, dtype=dtype, count=size // dtype.itemsize, offset=offset).reshape(shape)
        arrays[name] = arr.astype(dtype.newbyteorder("="))  # a writable native-order copy
        offset += size
    return _migrate(data, header, arrays)


def _check_prefix(data: bytes) -> int:
    """End offset of the header, after checking the magic, the version and that the header fits in ``data``."""
    if data[: len(MAGIC)] != MAGIC:
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            raise SerialError(f"truncated data: {len(data)} bytes, not even the {len(MAGIC)}-byte magic {MAGIC!r}")
        raise SerialError(f"bad magic {data[:len(MAGIC)]!r}: not dpstream sketch bytes (they start with {MAGIC!r})")
    if len(data) < _PREFIX.size:
        raise SerialError(f"truncated data: {len(data)} bytes, the fixed prefix alone needs {_PREFIX.size}")
    _, version, header_len = _PREFIX.unpack_from(data)
    if version > FORMAT_VERSION:
        raise SerialError(f"format version {version} was written by a newer dpstream; this one reads versions up to "
                          f"{FORMAT_VERSION}: upgrade dpstream to restore it")
    missing = [v for v in range(version, FORMAT_VERSION) if v not in MIGRATIONS]
    if missing:
        raise SerialError(f"format version {version} was written by an older dpstream and this one has no migration "
                          f"from version {missing[0]}: restore and finish it with the dpstream that wrote it (one "
                          f"state restored in two places lets the continuations cancel the noise), or add the "
                          f"migration to dpstream.serial.MIGRATIONS")
    end = _PREFIX.size + header_len
    if len(data) < end + _CRC.size:
        raise SerialError(f"truncated data: {len(data)} bytes, the header alone needs {end + _CRC.size}")
    return end


def _migrate(data: bytes, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                            dict[str, np.ndarray]]:
    """(header, arrays) of an older format version carried up to ``FORMAT_VERSION`` (``MIGRATIONS``)."""
    version = _PREFIX.unpack_from(data)[1]
    for v in range(version, FORMAT_VERSION):
        header, arrays = MIGRATIONS[v](header, arrays)
    return header, arrays


def _no_constant(token: str) -> float:
    raise SerialError(f"corrupt header: {token} is not a number this format writes")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise SerialError(f"corrupt header: {text} is not a finite number")
    return value


def _parse(raw: bytes) -> dict[str, Any]:
    """The header JSON as a dict with exactly the four keys of the format, each of its type."""
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        if isinstance(err, SerialError):
            raise
        raise SerialError(f"corrupt header: {err}") from err
    types = {"class": str, "args": dict, "state": dict, "arrays": list}
    if not isinstance(header, dict) or set(header) != set(types):
        keys = sorted(header) if isinstance(header, dict) else type(header).__name__
        raise SerialError(f"corrupt header: keys {keys}, expected {sorted(types)}")
    for key, kind in types.items():
        if not isinstance(header[key], kind):
            raise SerialError(f"corrupt header: {key!r} is a {type(header[key]).__name__}, expected {kind.__name__}")
    return header


def _array_spec(entry: Any) -> ArraySpec:
    """One checked entry of the array listing: a name, a known dtype string, a list of non-negative integers."""
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str) and isinstance(entry[1], str)
            and isinstance(entry[2], list)):
        raise SerialError(f"corrupt header: array entry {entry!r:.80} is not [name, dtype, shape]")
    name, dtype, shape = entry
    if dtype not in _DTYPES:
        raise SerialError(f"corrupt header: array {name!r:.40} has dtype {dtype!r:.40}; allowed: {sorted(_DTYPES)}")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape) or len(shape) > 8:
        raise SerialError(f"corrupt header: array {name!r:.40} has shape {shape!r:.80}, expected at most 8 "
                          f"non-negative integers")
    return name, np.dtype(dtype), tuple(shape)


def restorable() -> list[str]:
    """The names in ``REGISTRY`` of classes that can be built: not the abstract bases (``Counter``, ...).

    Read when asked: ``__init_subclass__`` registers a class before ``ABCMeta`` knows its abstract methods.
    """
    return [name for name, cls in REGISTRY.items() if not inspect.isabstract(cls)]


def _read_header(data: bytes, end: int, cls_name: str | None) -> tuple[dict[str, Any], list[ArraySpec]]:
    """The JSON header and its array listing (name, dtype, shape), checked to be of ``cls_name`` and numeric."""
    header = _parse(data[_PREFIX.size:end])
    found = _read_as(header["class"], _PREFIX.unpack_from(data)[1])  # the class that reads it now
    known = restorable()
    if found not in known:
        raise SerialError(f"unknown class name {found!r:.80}: not a dpstream serialised class "
                          f"(known: {', '.join(sorted(known))})")
    if cls_name is not None and found != cls_name:
        raise SerialError(f"the bytes hold a {found}, not a {cls_name}: restore them with {found}.from_bytes")
    listing = [_array_spec(entry) for entry in header["arrays"]]
    if any(n > len(data) for _, _, shape in listing for n in shape):  # beside a 0, a dimension could be anything
        raise SerialError(f"corrupt header: an array dimension exceeds the {len(data)} bytes given")
    names = [name for name, _, _ in listing]
    if len(set(names)) != len(names):
        raise SerialError("corrupt header: an array name appears twice")
    return header, listing


def _check_body(data: bytes, expected: int) -> None:
    """Check that ``data`` is exactly ``expected`` bytes long and that its CRC-32 matches."""
    if len(data) < expected:
        raise SerialError(f"truncated data: {len(data)} bytes, the header announces {expected}")
    if len(data) > expected:
        raise SerialError(f"{len(data) - expected} unexpected trailing bytes after the {expected} announced")
    (crc,) = _CRC.unpack_from(data, expected - _CRC.size)
    if crc != zlib.crc32(data[: expected - _CRC.size]):
        raise SerialError("checksum mismatch: the bytes were altered or corrupted")


def size_arg(args: Mapping[str, Any], name: str) -> int:
    """``args[name]`` checked to be an integer >= 0 (before it sizes anything); ``SerialError`` otherwise."""
    value = args[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SerialError(f"corrupt header: argument {name}={value!r:.40} is not a non-negative integer")
    return value


def int_in(value: Any, name: str, low: int, high: int) -> int:
    """``value`` checked to be an integer (not a bool) in [low, high]; ``SerialError`` naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SerialError(f"corrupt state: {name}={value!r:.40} is not an integer in [{low}, {high}]")
    return value


def json_value(value: Any) -> Any:
    """``value`` as written in a header: numpy scalars as Python numbers, a dtype (or numeric type) by its name."""
    if isinstance(value, type) or isinstance(value, np.dtype):
        return np.dtype(value).name
    if isinstance(value, np.generic):
        return value.item()
    return value


def noise_state(noise: NoiseSource) -> dict[str, Any]:
    """The JSON state of a noise source: its mode and its generator's ``bit_generator.state`` (a dict of ints)."""
    return {"noise_mode": noise.mode, "rng": noise.rng.bit_generator.state}


def restore_noise(noise: NoiseSource, scalars: Mapping[str, Any]) -> None:
    """Put ``noise`` back in the state ``noise_state`` recorded, after checking the mode and the generator state."""
    mode, state = scalars["noise_mode"], scalars["rng"]
    if mode not in NOISE_MODES:
        raise SerialError(f"corrupt state: noise_mode={mode!r:.40}; allowed: {', '.join(NOISE_MODES)}")
    noise.mode = mode
    noise.rng.bit_generator.state = state
    if json.dumps(noise.rng.bit_generator.state) != json.dumps(state):  # numpy casts (has_uint32=true) silently
        raise SerialError("corrupt state: the noise generator's state is not one numpy's PCG64 can hold")


def nest(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with keys ``prefix.key`` (a part's arrays inside its owner's)."""
    return {f"{prefix}.{k}": v for k, v in values.items()}


def part(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``values`` nested under ``prefix`` (inverse of ``nest``)."""
    head = prefix + "."
    return {k[len(head):]: v for k, v in values.items() if k.startswith(head)}


def check_arrays(live: Mapping[str, np.ndarray], stored: Mapping[str, np.ndarray], owner: str) -> None:
    """``stored`` must hold the names of ``live``, each with its shape and dtype; else an error naming the first gap."""
    if set(live) != set(stored):
        missing, extra = sorted(set(live) - set(stored)), sorted(set(stored) - set(live))
        raise SerialError(f"{owner} state arrays do not match: missing {missing}, unexpected {extra}")
    for name, arr in live.items():
        value = stored[name]
        if value.shape != arr.shape or value.dtype != arr.dtype:
            raise SerialError(f"{owner} array {name!r}: stored {value.dtype}{list(value.shape)}, "
                             f"expected {arr.dtype}{list(arr.shape)}")


def copy_into(live: Mapping[str, np.ndarray], stored: Mapping[str, np.ndarray], owner: str) -> None:
    """Copy ``stored`` into the same-named ``live`` arrays after checking names, shapes and dtypes, ``check_arrays``."""
    check_arrays(live, stored, owner)
    for name, arr in live.items():
        np.copyto(arr, stored[name])


def check_vectors(stored: Mapping[str, np.ndarray], dtypes: Mapping[str, type], owner: str) -> None:
    """Variable-length state: ``stored`` must be exactly the 1-D arrays named in ``dtypes``, of those dtypes."""
    if set(stored) != set(dtypes):
        missing, extra = sorted(set(dtypes) - set(stored)), sorted(set(stored) - set(dtypes))
        raise SerialError(f"{owner} state arrays do not match: missing {missing}, unexpected {extra}")
    for name, dtype in dtypes.items():
        if stored[name].ndim != 1 or stored[name].dtype != dtype:
            raise SerialError(f"{owner} array {name!r}: stored {stored[name].dtype}{list(stored[name].shape)}, "
                             f"expected a 1-D {np.dtype(dtype)} array")


def check_same(what: str, stored: Any, rebuilt: Any) -> None:
    """Constants recomputed by the rebuild (sigma, BLT coefficients) must equal the stored ones, JSON types included."""
    if json.dumps(stored) != json.dumps(rebuilt):
        raise SerialError(f"{what} in the bytes is {stored!r} but this dpstream computes {rebuilt!r} for the same "
                         f"arguments: written by a version with another calibration; refusing to continue the "
                         f"stream with different noise")


def check_no_import(args: Any) -> None:
    """Refuse a ``counter`` argument naming a ``module:Class`` whose module is not imported yet.

    A counter outside the package is named by its import path; importing it while reading bytes would run whatever
    module a received file names. An own counter restores once its module is imported (``import toy_counter``).
    """
    if isinstance(args, Mapping):
        for key, value in args.items():
            if key == "counter" and isinstance(value, str) and ":" in value:
                module = value.partition(":")[0]
                if module not in sys.modules:
                    raise SerialError(f"corrupt header: counter {value!r} names module {module!r}, which is not "
                                      f"imported; bytes never import code (import it first to restore an own "
                                      f"counter)"[:500])
            check_no_import(value)
    elif isinstance(args, list):
        for value in args:
            check_no_import(value)


_REFUSED = (ValueError, KeyError, TypeError, IndexError, AttributeError, ArithmeticError, RuntimeError,
            RecursionError)
"""What building or restoring from checked-but-inconsistent arguments may raise: turned into ``SerialError``."""


class Serialisable:
    """``to_bytes`` / ``from_bytes`` over the hooks below (see the module docstring)."""

    fixed_arrays: ClassVar[bool] = False
    """Whether the arguments fix the state arrays' names, shapes and dtypes (``_state_arrays`` of the rebuilt object):
    then the stored arrays are checked against them before the scalars are restored."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Register the class under its name in ``REGISTRY`` (the first class of a name keeps it)."""
        super().__init_subclass__(**kwargs)
        REGISTRY.setdefault(cls.__name__, cls)

    def _serial_args(self) -> dict[str, Any]:
        """JSON constructor arguments that rebuild an object with the same shapes and constants."""
        raise NotImplementedError

    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> Self:
        """A fresh object from ``_serial_args`` (fresh OS-entropy seeds: every seeded value is then restored)."""
        raise NotImplementedError

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        """Bytes ``_rebuild(args)`` allocates, from the arguments checked with ``size_arg`` (before the rebuild)."""
        raise NotImplementedError

    @classmethod
    def _working_bytes(cls, args: dict[str, Any]) -> int:
        """Bytes of the working tables ``_rebuild(args)`` builds besides the state (none by default)."""
        return 0

    def _state_scalars(self) -> dict[str, Any]:
        """JSON state values besides the arrays."""
        return {}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """Set the values ``_state_scalars`` returned."""

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The live state arrays, by name."""
        return {}

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Set the arrays ``_state_arrays`` returned (default: copy into the fixed-shape live arrays)."""
        copy_into(self._state_arrays(), arrays, type(self).__name__)

    def to_bytes(self) -> bytes:
        """The exact state as bytes (format ``dpstream.serial``, version ``FORMAT_VERSION``, no pickle).

        SECRET: the bytes hold the noise generator's state (and, with derived node noise, the Philox key) and,
        for a private object, exact counts; keep them as secret as the stream itself. Releasing them voids
        the privacy guarantee.
        """
        return pack(type(self).__name__, self._serial_args(), self._state_scalars(), self._state_arrays())

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """The object ``to_bytes`` wrote: fed the same remaining stream, it makes the same releases bit for bit.

        Raises ``SerialError`` (a ``ValueError``) naming the defect for bad magic, an unsupported version, another
        or an unknown class, truncated, trailing or corrupted data, and state that does not fit its arguments.
        """
        header, arrays = unpack(data, cls.__name__)
        return cls._restore(header, arrays, len(data))

    @classmethod
    def _restore(cls, header: dict[str, Any], arrays: dict[str, np.ndarray], n_bytes: int) -> Self:
        args = header["args"]
        check_no_import(args)
        try:
            need = cls._allocation_bytes(args)
            limit = ALLOCATION_SLACK * n_bytes + ALLOCATION_ALLOWANCE
            if need > limit:
                raise SerialError(f"corrupt header: the arguments of this {cls.__name__} would allocate {need} "
                                  f"bytes, more than the {limit} that {n_bytes} bytes of state can describe")
            working = cls._working_bytes(args)
            if working > WORKING_LIMIT:
                raise SerialError(f"corrupt header: the arguments of this {cls.__name__} need {working} bytes of "
                                  f"working tables, more than dpstream.serial.WORKING_LIMIT = {WORKING_LIMIT}")
            obj = cls._rebuild(dict(args))
            back = obj._serial_args()
            if json.dumps(back) != json.dumps(args):
                differ = [f"{k}={args.get(k)!r} read back as {back.get(k)!r}" for k in sorted(set(args) | set(back))
                          if json.dumps(args.get(k)) != json.dumps(back.get(k))] or ["the order of the arguments"]
                raise SerialError(f"corrupt header: {cls.__name__} arguments differ: {'; '.join(differ)}"[:500])
            if obj.fixed_arrays:  # a state of another layout (node noise) is named by its arrays, not its scalars
                check_arrays(obj._state_arrays(), arrays, cls.__name__)
            obj._restore_scalars(header["state"])
            obj._restore_arrays(arrays)
        except SerialError:
            raise
        except KeyError as err:
            raise SerialError(f"corrupt header for {cls.__name__}: missing key {err}"[:500]) from err
        except _REFUSED as err:
            raise SerialError(f"corrupt header for {cls.__name__}: {type(err).__name__}: {err}"[:500]) from err
        return obj


def from_bytes(data: bytes) -> Serialisable:
    """Whatever dpstream object ``data`` holds (its class read from the header, among ``REGISTRY`` only)."""
    header, arrays = unpack(data)
    return REGISTRY[header["class"]]._restore(header, arrays, len(data))
