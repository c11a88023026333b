"""Fuzz ``from_bytes`` of every serialised class with random mutations of valid bytes, under an address-space limit.

Run ``python tests/fuzz_serial.py --per-class 2000`` (``make fuzz``; ``tests/test_serial_fuzz.py`` runs a seeded 200).
The process first limits its address space (``RLIMIT_AS``, default 2 GB; importing numpy, scipy and numba and
compiling the kernels takes about 0.6 GB of it) and checks that a 4 GB allocation, the size a header field could ask
for, now fails. Then, for every class of ``serial_cases.CASES``, it mutates the bytes of a few objects fed part of a
stream and reads them back:

- raw mutations (truncation, flipped bits anywhere, a flipped count byte, appended bytes, the version or the header
  length set to random values) leave the checksum stale: each MUST end in ``serial.SerialError``;
- re-framed mutations (a header value set to a huge, negative or wrong-typed value, an array listed with another
  dtype or shape, another or an unknown class name, a key dropped, a byte of the header text or of the payload
  changed, bytes inserted before the checksum) get a valid checksum: each must end in ``SerialError`` or, when the
  result is a consistent state, be read back FAITHFULLY (``to_bytes`` of the object read gives the mutated payload
  and the same header values, of the same JSON types: ``1E-3`` for ``0.001`` is the same header, ``true`` for 1 not).

Anything else fails the run: another exception (a crash), a ``MemoryError`` (an allocation sized from an unchecked
header field), a raw mutation accepted, or a re-framed one read back as something else. Exit status 1 on failure;
the last line of the output is a JSON summary. A faithfully read state then takes more of the stream and must not
crash on it.
"""

from __future__ import annotations

import argparse
import json
import resource
import struct
import sys
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

HOSTILE: list[Any] = [2**31, 2**32 + 1, 2**40, 2**62, 2**63, 2**64, 10**30, -1, -(2**40), 0, "x", "", None, True,
                      False, 1.5, -0.5, 1e308, [], {}, [1, 2], {"a": 1}]
"""Values a header field is set to: huge, negative, zero and wrong-typed."""
DTYPES: list[Any] = ["<f8", "<i4", "<i8", "|u1", "<u8", "<c16", "|O", "|V8", "<M8[s]", "|S4", "garbage", 5, None,
                     ">i8", "(2,)<i8"]
RAW = ("truncate", "flip_bits", "flip_count_byte", "append", "prefix_field")
REFRAMED = ("header_value", "array_listing", "class_name", "drop_key", "header_text", "payload", "insert_payload")
GIB = 1 << 30


def limit_address_space(gigabytes: float) -> None:
    """Limit this process's address space, then check that a 4 GB allocation fails (the limit is meaningful)."""
    limit = int(gigabytes * GIB)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import numpy as np

    try:
        np.ones(4 * GIB, dtype=np.uint8)
    except MemoryError:
        return
    raise SystemExit(f"a 4 GB allocation succeeded under RLIMIT_AS={gigabytes} GB: the limit does not bind")


def split(data: bytes) -> tuple[int, dict[str, Any], bytes]:
    """(version, header, payload) of valid bytes."""
    from dpstream import serial

    _, version, header_len = serial._PREFIX.unpack_from(data)
    end = serial._PREFIX.size + header_len
    return version, json.loads(data[serial._PREFIX.size:end]), data[end:-4]


def frame(header_text: bytes, payload: bytes, version: int = 1) -> bytes:
    """Bytes with a valid checksum around any header text and payload."""
    from dpstream import serial

    body = serial._PREFIX.pack(serial.MAGIC, version, len(header_text)) + header_text + payload
    return body + struct.pack("<I", zlib.crc32(body))


def leaves(node: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every value (containers included) below ``node``."""
    out = [path] if path else []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out.extend(leaves(value, (*path, key)))
    return out


def set_at(node: Any, path: tuple, value: Any) -> None:
    """Set the value at ``path`` (a leaf path of ``leaves``)."""
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


class Mutator:
    """The mutations of one kind of bytes, drawn from ``rng``."""

    def __init__(self, rng: Any, names: list[str]) -> None:
        """``names``: the registered class names (for the other-class mutation)."""
        self.rng = rng
        self.names = names
        self.last = ""

    def pick(self, seq: Any) -> Any:
        """A uniformly drawn element."""
        return seq[int(self.rng.integers(len(seq)))]

    def raw(self, kind: str, data: bytes) -> bytes:
        """A raw mutation (the checksum left stale)."""
        rng, buf = self.rng, bytearray(data)
        if kind == "truncate":
            return data[: int(rng.integers(len(data)))]
        if kind == "flip_bits":
            for _ in range(int(rng.integers(1, 9))):
                buf[int(rng.integers(len(buf)))] ^= 1 << int(rng.integers(8))
        elif kind == "flip_count_byte":
            _, _, payload = split(data)
            if not payload:
                return data[:-1]
            pos = len(data) - 4 - len(payload) + int(rng.integers(len(payload)))
            buf[pos] ^= 1 << int(rng.integers(8))
        elif kind == "append":
            buf += rng.bytes(int(rng.integers(1, 65)))
        else:  # prefix_field: the version (uint16) or the header length (uint32)
            if rng.random() < 0.5:
                struct.pack_into("<H", buf, 8, int(rng.integers(2, 1 << 16)))
            else:
                struct.pack_into("<I", buf, 10, self.pick([0, 1, (1 << 32) - 1, int(rng.integers(1 << 32))]))
        return bytes(buf)

    def reframed(self, kind: str, data: bytes) -> bytes:
        """A mutation re-framed with a valid checksum."""
        rng = self.rng
        version, header, payload = split(data)
        if kind == "header_text":
            text = bytearray(json.dumps(header).encode())
            text[int(rng.integers(len(text)))] = int(rng.integers(32, 127))
            return frame(bytes(text), payload, version)
        if kind == "payload":
            if payload:
                buf = bytearray(payload)
                buf[int(rng.integers(len(buf)))] ^= 1 << int(rng.integers(8))
                payload = bytes(buf)
        elif kind == "insert_payload":
            pos = int(rng.integers(len(payload) + 1))
            payload = payload[:pos] + rng.bytes(int(rng.integers(1, 65))) + payload[pos:]
        else:
            self.edit_header(kind, header)
        return frame(json.dumps(header).encode(), payload, version)

    def edit_header(self, kind: str, header: dict[str, Any]) -> None:
        """The header mutations, in place."""
        rng = self.rng
        if kind == "header_value":
            path, value = self.pick(leaves({k: header[k] for k in ("args", "state")})), self.pick(HOSTILE)
            set_at(header, path, value)
            self.last = f"{'/'.join(map(str, path))} = {value!r}"
        elif kind == "array_listing":
            if not header["arrays"]:
                header["arrays"] = [["x", "<i8", [1]]]
            entry = self.pick(header["arrays"])
            if rng.random() < 0.5:
                entry[1] = self.pick(DTYPES)
            elif entry[2]:
                entry[2][int(rng.integers(len(entry[2])))] = self.pick(HOSTILE)
            else:
                entry[2] = [self.pick(HOSTILE)]
        elif kind == "class_name":
            others = [name for name in self.names if name != header["class"]]
            header["class"] = self.pick([self.pick(others), "Pickle", "os.system", "", None, 7, ["LazyCMS"],
                                         rng.bytes(6).hex()])
        else:  # drop_key
            dicts = [p for p in leaves(header) if isinstance(_get(header, p), dict) and _get(header, p)] + [()]
            target = _get(header, self.pick(dicts))
            target.pop(self.pick(list(target)))


def _get(node: Any, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


def base_bytes(case: Any, rng: Any, n_variants: int) -> list[bytes]:
    """Bytes of ``case``'s class: the default options and random other combinations, after part of the stream."""
    from serial_cases import SPLIT, option_grid

    grid = option_grid(case)
    chosen = [grid[0], *(grid[int(i)] for i in rng.integers(len(grid), size=n_variants - 1))]
    out = []
    for options in chosen:
        obj = case.build(**options)
        case.feed(obj, 0, SPLIT)
        out.append(obj.to_bytes())
    return out


def _difference(data: bytes, again: bytes) -> str:
    (_, a, pa), (_, b, pb) = split(data), split(again)
    if pa != pb:
        return "the payload differs"
    flat_a, flat_b = dict(_flat(a)), dict(_flat(b))
    keys = sorted({*flat_a, *flat_b} - {k for k in flat_a if flat_b.get(k, object()) == flat_a[k]}, key=str)
    return "; ".join(f"{k}: {flat_a.get(k)!r:.60} -> {flat_b.get(k)!r:.60}" for k in keys[:4])


def _flat(node: Any, path: str = "") -> list[tuple[str, Any]]:
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else None
    if items is None:
        return [(path, json.dumps(node))]
    return [pair for key, value in items for pair in _flat(value, f"{path}/{key}")]


def check_one(case: Any, kind: str, data: bytes) -> str:
    """"rejected" or "faithful"; raises AssertionError naming any other outcome.

    A faithfully read state then takes more of the stream: it may refuse it with a ``ValueError`` (a corrupted step
    count can put it at its horizon), never crash.
    """
    obj = _read(case.cls, kind, data)
    if obj is None:
        return "rejected"
    if kind in RAW:
        raise AssertionError("accepted bytes whose checksum does not match")
    if kind == "class_name":
        raise AssertionError("accepted another class's name")
    again = obj.to_bytes()
    (_, header, payload), (_, header_again, payload_again) = split(data), split(again)
    if payload != payload_again or json.dumps(header) != json.dumps(header_again):  # same values, same JSON types
        raise AssertionError(f"accepted and read back as another state (silently altered): {_difference(data, again)}")
    from serial_cases import SPLIT

    try:
        case.feed(obj, SPLIT, SPLIT + 40)
    except ValueError:
        pass
    except Exception as err:  # any other exception is the failure reported
        raise AssertionError(f"a state read faithfully crashed on the stream: {type(err).__name__}: {err}") from err
    return "faithful"


def _read(cls: type, kind: str, data: bytes) -> Any:
    """The object read, or None when refused with ``SerialError``; AssertionError for any other exception."""
    from dpstream import serial

    try:
        return cls.from_bytes(data)
    except serial.SerialError:
        if kind == "class_name":  # the generic reader refuses them too
            try:
                serial.from_bytes(data)
            except serial.SerialError:
                return None
            except Exception as err:  # any other exception is the failure reported
                raise AssertionError(f"serial.from_bytes: {type(err).__name__}: {err}"[:300]) from err
        return None
    except MemoryError as err:
        raise AssertionError("MemoryError: an allocation sized from an unchecked header field") from err
    except Exception as err:  # any other exception is the failure reported
        raise AssertionError(f"{type(err).__name__}: {err}"[:300]) from err


def run(per_class: int, seed: int, only: list[str] | None = None, kinds: tuple[str, ...] = RAW + REFRAMED,
        ) -> dict[str, Any]:
    """Fuzz every class of ``serial_cases.CASES`` (or those named in ``only``) with ``kinds``; the summary dict."""
    import numpy as np
    from serial_cases import CASES

    from dpstream import serial

    summary: dict[str, Any] = {"seed": seed, "per_class": per_class, "classes": {}, "failures": []}
    for index, case in enumerate(CASES):
        if only and case.name not in only:
            continue
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
        start = time.perf_counter()
        bases = base_bytes(case, rng, 3)
        mutator = Mutator(rng, sorted(serial.REGISTRY))
        outcomes: Counter[str] = Counter()
        drawn: Counter[str] = Counter()
        for i in range(per_class):
            kind = mutator.pick(kinds)
            data = mutator.pick(bases)
            mutator.last = ""
            mutated = mutator.raw(kind, data) if kind in RAW else mutator.reframed(kind, data)
            drawn[kind] += 1
            try:
                outcomes[check_one(case, kind, mutated)] += 1
            except AssertionError as err:
                outcomes["failed"] += 1
                summary["failures"].append({"class": case.name, "mutation": i, "kind": kind,
                                            "error": f"{mutator.last} {err}".strip(),
                                            "bytes": mutated.hex()[:400]})
        summary["classes"][case.name] = {"mutations": per_class, **outcomes, "kinds": dict(drawn),
                                         "seconds": round(time.perf_counter() - start, 2)}
        print(f"{case.name:26s} {per_class:6d} mutations  {dict(outcomes)}  {time.perf_counter() - start:.1f} s",
              flush=True)
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-class", type=int, default=2000, help="mutations per serialised class")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--address-space-gb", type=float, default=2.0)
    parser.add_argument("--only", nargs="*", help="class names to fuzz (default: all)")
    parser.add_argument("--kinds", nargs="*", choices=RAW + REFRAMED, help="mutation kinds (default: all)")
    parser.add_argument("--without-size-checks", action="store_true",
                        help="lift the size bounds of the reader and the constructors (the address-space "
                             "limit then catches allocations)")
    args = parser.parse_args(argv)
    limit_address_space(args.address_space_gb)
    if args.without_size_checks:
        from dpstream import serial, validation

        serial.ALLOCATION_SLACK = serial.WORKING_LIMIT = 1 << 80
        validation.physical_memory = lambda: 1 << 80  # the constructors' absurd-size refusal lifted too
    start = time.perf_counter()
    summary = run(args.per_class, args.seed, args.only, tuple(args.kinds or RAW + REFRAMED))
    summary["seconds"] = round(time.perf_counter() - start, 1)
    for failure in summary["failures"][:20]:
        print(f"FAILED {failure['class']} #{failure['mutation']} {failure['kind']}: {failure['error']}")
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"} | {"failed": len(summary["failures"])}))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
