"""A versioned byte format (no pickle) for the state of every streaming object: sketches, trackers, counters, monitors.

Layout, little-endian::

    b"DPSTREAM" | format version (uint16) | header length (uint32) | header (UTF-8 JSON)
    | the arrays' raw C-order bytes, in the header's order | CRC-32 of everything before (uint32)

The header is ``{"class": name, "args": constructor arguments, "state": JSON scalars (t, the noise generator's
``bit_generator.state``, ...), "arrays": [[name, dtype, shape], ...]}``. Only numeric dtypes are written, and
reading never executes anything from the data. ``unpack`` refuses, with a ``ValueError`` naming what is wrong,
bytes without the magic, an unsupported version, another class, truncated or trailing data and a bad checksum.

An object is ``Serialisable`` when it can rebuild itself from its arguments (``_serial_args`` / ``_rebuild``) and
lists its state in one place: ``_state_scalars`` (JSON values) and ``_state_arrays`` (the LIVE arrays, so the
default ``_restore_arrays`` copies the stored values into the fresh object's arrays after checking names, shapes
and dtypes); owners nest the state of their parts under a prefix (``nest`` / ``part``).
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from collections.abc import Mapping
from typing import Any, Self

import numpy as np

from dpstream.noise import NOISE_MODES, NoiseSource

MAGIC = b"DPSTREAM"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
_PREFIX = struct.Struct("<8sHI")  # magic, version, header length
_CRC = struct.Struct("<I")
_NUMERIC_KINDS = "biuf"
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


def unpack(data: bytes, cls_name: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header, arrays) of bytes written by ``pack`` for class ``cls_name``; ValueError naming any defect."""
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
    return header, arrays


def _check_prefix(data: bytes) -> int:
    """End offset of the header, after checking the magic, the version and that the header fits in ``data``."""
    if data[: len(MAGIC)] != MAGIC:
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            raise ValueError(f"truncated data: {len(data)} bytes, not even the {len(MAGIC)}-byte magic {MAGIC!r}")
        raise ValueError(f"bad magic {data[:len(MAGIC)]!r}: not dpstream sketch bytes (they start with {MAGIC!r})")
    if len(data) < _PREFIX.size:
        raise ValueError(f"truncated data: {len(data)} bytes, the fixed prefix alone needs {_PREFIX.size}")
    _, version, header_len = _PREFIX.unpack_from(data)
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"unsupported format version {version}; this dpstream reads versions "
                         f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    end = _PREFIX.size + header_len
    if len(data) < end + _CRC.size:
        raise ValueError(f"truncated data: {len(data)} bytes, the header alone needs {end + _CRC.size}")
    return end


def _read_header(data: bytes, end: int, cls_name: str) -> tuple[dict[str, Any], list[ArraySpec]]:
    """The JSON header and its array listing (name, dtype, shape), checked to be of ``cls_name`` and numeric."""
    try:
        header = json.loads(data[_PREFIX.size:end])
        listing = [(str(name), np.dtype(dtype), tuple(int(n) for n in shape))
                   for name, dtype, shape in header["arrays"]]
        found = header["class"]
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        raise ValueError(f"corrupt header: {err}") from err
    if found != cls_name:
        raise ValueError(f"the bytes hold a {found}, not a {cls_name}: restore them with {found}.from_bytes")
    if any(dtype.kind not in _NUMERIC_KINDS or min(shape, default=0) < 0 for _, dtype, shape in listing):
        raise ValueError("corrupt header: an array with a non-numeric dtype or a negative dimension")
    return header, listing


def _check_body(data: bytes, expected: int) -> None:
    """Check that ``data`` is exactly ``expected`` bytes long and that its CRC-32 matches."""
    if len(data) < expected:
        raise ValueError(f"truncated data: {len(data)} bytes, the header announces {expected}")
    if len(data) > expected:
        raise ValueError(f"{len(data) - expected} unexpected trailing bytes after the {expected} announced")
    (crc,) = _CRC.unpack_from(data, expected - _CRC.size)
    if crc != zlib.crc32(data[: expected - _CRC.size]):
        raise ValueError("checksum mismatch: the bytes were altered or corrupted")


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
        raise ValueError(f"corrupt state: noise_mode={mode!r}; allowed: {', '.join(NOISE_MODES)}")
    noise.mode = mode
    noise.rng.bit_generator.state = state
    if noise.rng.bit_generator.state != state:  # numpy normalises some fields (has_uint32) instead of refusing
        raise ValueError("corrupt state: the noise generator's state is not one numpy's PCG64 can hold")


def nest(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with keys ``prefix.key`` (a part's arrays inside its owner's)."""
    return {f"{prefix}.{k}": v for k, v in values.items()}


def part(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``values`` nested under ``prefix`` (inverse of ``nest``)."""
    head = prefix + "."
    return {k[len(head):]: v for k, v in values.items() if k.startswith(head)}


def copy_into(live: Mapping[str, np.ndarray], stored: Mapping[str, np.ndarray], owner: str) -> None:
    """Copy ``stored`` into the same-named ``live`` arrays after checking names, shapes and dtypes."""
    if set(live) != set(stored):
        missing, extra = sorted(set(live) - set(stored)), sorted(set(stored) - set(live))
        raise ValueError(f"{owner} state arrays do not match: missing {missing}, unexpected {extra}")
    for name, arr in live.items():
        value = stored[name]
        if value.shape != arr.shape or value.dtype != arr.dtype:
            raise ValueError(f"{owner} array {name!r}: stored {value.dtype}{list(value.shape)}, "
                             f"expected {arr.dtype}{list(arr.shape)}")
        np.copyto(arr, value)


def check_vectors(stored: Mapping[str, np.ndarray], dtypes: Mapping[str, type], owner: str) -> None:
    """Variable-length state: ``stored`` must be exactly the 1-D arrays named in ``dtypes``, of those dtypes."""
    if set(stored) != set(dtypes):
        missing, extra = sorted(set(dtypes) - set(stored)), sorted(set(stored) - set(dtypes))
        raise ValueError(f"{owner} state arrays do not match: missing {missing}, unexpected {extra}")
    for name, dtype in dtypes.items():
        if stored[name].ndim != 1 or stored[name].dtype != dtype:
            raise ValueError(f"{owner} array {name!r}: stored {stored[name].dtype}{list(stored[name].shape)}, "
                             f"expected a 1-D {np.dtype(dtype)} array")


def check_same(what: str, stored: Any, rebuilt: Any) -> None:
    """Constants recomputed by the rebuild (sigma, BLT coefficients) must equal the stored ones."""
    if stored != rebuilt:
        raise ValueError(f"{what} in the bytes is {stored!r} but this dpstream computes {rebuilt!r} for the same "
                         f"arguments: written by a version with another calibration; refusing to continue the "
                         f"stream with different noise")


class Serialisable:
    """``to_bytes`` / ``from_bytes`` over the hooks below (see the module docstring)."""

    def _serial_args(self) -> dict[str, Any]:
        """JSON constructor arguments that rebuild an object with the same shapes and constants."""
        raise NotImplementedError

    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> Self:
        """A fresh object from ``_serial_args`` (fresh OS-entropy seeds: every seeded value is then restored)."""
        raise NotImplementedError

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
        """The exact state as bytes (format ``dpstream.sketches.serial``, version ``FORMAT_VERSION``, no pickle).

        SECRET: the bytes hold the noise generator's state (and, with derived node noise, the Philox key) and,
        for a private sketch, exact counts; keep them as secret as the stream itself. Releasing them voids
        the privacy guarantee.
        """
        return pack(type(self).__name__, self._serial_args(), self._state_scalars(), self._state_arrays())

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """The object ``to_bytes`` wrote: fed the same remaining stream, it makes the same releases bit for bit.

        Raises ``ValueError`` naming the defect for bad magic, an unsupported version, another class,
        truncated, trailing or corrupted data.
        """
        header, arrays = unpack(data, cls.__name__)
        try:
            obj = cls._rebuild(dict(header["args"]))
            obj._restore_scalars(header["state"])
        except (KeyError, TypeError) as err:
            raise ValueError(f"corrupt header for {cls.__name__}: {err!r}") from err
        obj._restore_arrays(arrays)
        return obj
