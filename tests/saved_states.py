"""Saved states of every shipped counter and of the sketches holding them, kept as files (``tests/data/states``).

Each file ``<Class>[.<node_noise>].npz`` (a counter; the node noise of a tree counter that takes several) or
``<Class>-<counter>-<node_noise>.npz`` (a sketch) holds the bytes ``to_bytes`` wrote after the first ``SPLIT``
stream positions (``state``, uint8), what the object released then (``at_save_<i>``) and what it released after the
stream up to ``CONTINUE`` (``continued_<i>``). ``python tests/saved_states.py`` writes them all, ``python
tests/saved_states.py --missing`` only those not yet kept (a new counter's); each file was written by the code it is
named after when it was added (the first ones before counters became factorisations; those of a counter class per
node noise, in format 1, are named by the class and node noise that read them now, ``serial.RENAMED``), and
``test_saved_states.py`` checks every later version restores them and answers the same. The five of the derived BLT
were written again when its generation tables got their own QR (``blt.BLOCK_QR``): LAPACK's, which built the earlier
ones, released other noise on other CPUs, and such a state is refused (``tests/data/refused``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from serial_cases import BY_NAME, CASES, SPLIT, Case, option_grid

DIR = Path(__file__).parent / "data" / "states"
CONTINUE = 400
SKETCHES = ("LazyCMS", "LazyCS", "PunctualCMS", "LazyHH", "GaussBM")
"""The sketches (and GaussBM) whose states hold a counter; the counters themselves are every entry of ``COUNTERS``."""


def fixtures() -> Iterator[tuple[str, Case, dict[str, Any]]]:
    """(file stem, case, options) of every saved state: each counter class, each sketch with each counter pair."""
    from dpstream.counters import COUNTERS

    for d in COUNTERS.values():
        yield d.label, BY_NAME[d.cls.__name__], {"node_noise": d.node_noise} if "." in d.label else {}
    for name in SKETCHES:
        case = BY_NAME[name]
        pairs = dict.fromkeys((o["counter"], o["node_noise"]) for o in option_grid(case) if "counter" in o)
        if not pairs:
            yield name, case, {}
        for counter, noise in pairs:
            yield f"{name}-{counter}-{noise}", case, {"counter": counter, "node_noise": noise}


def releases(case: Case, obj: Any, t: int) -> list[np.ndarray]:
    """What ``obj`` releases after ``t`` positions, as arrays."""
    return [np.array(x) for x in case.releases(obj, t)]  # copies: a release may be a view of live state


def write(missing: bool = False) -> None:
    """Write every fixture file (only those not kept yet if ``missing``) from the code installed now."""
    DIR.mkdir(parents=True, exist_ok=True)
    for stem, case, options in fixtures():
        if missing and (DIR / f"{stem}.npz").exists():
            continue
        obj = case.build(**options)
        case.feed(obj, 0, SPLIT)
        arrays = {"state": np.frombuffer(obj.to_bytes(), dtype=np.uint8)}
        arrays.update({f"at_save_{i}": a for i, a in enumerate(releases(case, obj, SPLIT))})
        case.feed(obj, SPLIT, CONTINUE)
        arrays.update({f"continued_{i}": a for i, a in enumerate(releases(case, obj, CONTINUE))})
        np.savez_compressed(DIR / f"{stem}.npz", **arrays)


assert CASES  # serial_cases builds every case at import

if __name__ == "__main__":
    import sys

    write(missing="--missing" in sys.argv[1:])
