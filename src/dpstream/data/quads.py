"""Dotted-quad IPv4 text (a CSV export's source column) parsed to uint32 keys by a compiled kernel."""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

VALID, NON_IPV4, MALFORMED = 0, 1, 2
"""Kinds of a value: a dotted quad; empty or holding anything but digits and dots (IPv6, a MAC, a name); only
digits and dots but not four octets of 1-3 digits each at most 255."""


@numba.njit(cache=True)
def _parse(data: np.ndarray, offsets: np.ndarray, out: np.ndarray, kind: np.ndarray) -> int:
    """Parse value i (bytes ``data[offsets[i]:offsets[i + 1]]``, surrounding spaces ignored); the valid count."""
    n = 0
    for i in range(kind.size):
        a, b = offsets[i], offsets[i + 1]
        while a < b and (data[a] == 32 or data[a] == 9 or data[a] == 13):
            a += 1
        while b > a and (data[b - 1] == 32 or data[b - 1] == 9 or data[b - 1] == 13):
            b -= 1
        if a == b:
            kind[i] = NON_IPV4
            continue
        key, octet, digits, dots, ok, other = 0, 0, 0, 0, True, False
        for j in range(a, b):
            c = data[j]
            if c == 46:
                ok = ok and 0 < digits and octet <= 255
                key, octet, digits, dots = (key << 8) | octet, 0, 0, dots + 1
            elif 48 <= c <= 57:
                octet, digits = octet * 10 + (c - 48), digits + 1
                ok = ok and digits <= 3
            else:
                other = True
                break
        if other:
            kind[i] = NON_IPV4
        elif ok and dots == 3 and 0 < digits and octet <= 255:
            out[n] = (key << 8) | octet
            n += 1
            kind[i] = VALID
        else:
            kind[i] = MALFORMED
    return n


def parse_quads(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(uint32 keys of the valid values in order, the kind of every value) of an Arrow string array."""
    values = values.cast(pa.string())
    _, offsets_buf, data_buf = values.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[values.offset:values.offset + len(values) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    out = np.empty(len(values), dtype=np.uint32)
    kind = np.empty(len(values), dtype=np.int8)
    n = _parse(data, offsets, out, kind)
    return out[:n], kind
