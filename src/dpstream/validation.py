"""Parameter checks shared by every mechanism: each names the bad value and what is allowed."""

from __future__ import annotations

import math
import os
from numbers import Integral, Real


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float if it is finite and > 0, else raise ``ValueError``."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return float(epsilon)


def check_delta(delta: object, name: str = "delta") -> float:
    """Return ``delta`` as a float if it lies in the open interval (0, 1), else raise ``ValueError``."""
    if isinstance(delta, bool) or not isinstance(delta, Real) or not (0.0 < float(delta) < 1.0):
        raise ValueError(f"{name} must be in the open interval (0, 1), got {delta!r}")
    return float(delta)


MAX_SIZE = 2**62
"""The largest count or size a check accepts: products and sums of two such values still fit in int64."""


def check_positive_int(value: object, name: str, minimum: int = 1, maximum: int | None = MAX_SIZE) -> int:
    """Return ``value`` as an int if it is an integer in [``minimum``, ``maximum``], else raise ``ValueError``.

    ``maximum`` None: no upper bound (a seed); the default keeps sizes within 64-bit arithmetic.
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and int(value) > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum} (2^{maximum.bit_length() - 1}), got {value!r}")
    return int(value)


def check_open_interval(value: float, name: str, low: float, high: float) -> float:
    """Return ``value`` as a float if ``low < value < high``, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, Real) or not (low < value < high):
        raise ValueError(f"{name} must be in the open interval ({low}, {high}), got {value!r}")
    return float(value)


def check_choice(value: str, name: str, allowed: list[str] | tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise ``ValueError`` listing them."""
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(sorted(allowed))}")
    return value


CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
"""Where a container's memory limit is written (cgroup v2, v1): "max" or a number of bytes."""


def physical_memory() -> int:
    """Bytes of memory this process may use: the machine's RAM (``os.sysconf``), or its container's limit if lower.

    2^63 where neither is known.
    """
    try:
        total = int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        total = 2**63
    for path in CGROUP_LIMITS:
        try:
            with open(path) as fh:
                limit = fh.read().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return total


def readable_bytes(n: float) -> str:
    """``n`` bytes in decimal units: ``"24.0 kB"``, ``"12.0 TB"``."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def check_allocation(nbytes: float, what: str) -> None:
    """Refuse, before allocating, state that needs more bytes than this machine has (an absurd width or n).

    ``ValueError`` in one line naming ``what``, the bytes it would need and the machine's memory.
    """
    available = physical_memory()
    if nbytes > available:
        raise ValueError(f"{what} would need {readable_bytes(nbytes)} of memory, more than this machine's "
                         f"{readable_bytes(available)}; choose smaller sizes")


def check_memory(count: int, name: str, bytes_each: float, what: str) -> int:
    """Return ``count`` if ``count`` ``what`` of ``bytes_each`` bytes each fit in memory, else raise ``ValueError``.

    Checked before allocating: the message names ``name``, the estimate and the largest count that fits.
    """
    available = physical_memory()
    if count * bytes_each > available:
        raise ValueError(f"{name} must be at most {int(available // bytes_each)} on this machine: {count} {what} "
                         f"would need ~{readable_bytes(count * bytes_each)}, more than its {readable_bytes(available)} "
                         f"of memory, got {count!r}")
    return count
