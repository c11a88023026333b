"""Sketches and heavy-hitter trackers as library objects.

``to_bytes`` / ``from_bytes`` restore the exact state (the round trip over every option: ``test_serial_roundtrip``), bad
bytes are refused with an error naming the defect, and non-private CMS / CS merge
into the sketch of the concatenation.
"""

import json
import subprocess
import sys
import zlib

import numpy as np
import pytest
from conftest import child_env
from fuzz_serial import frame as fuzz_frame
from fuzz_serial import split as fuzz_split
from test_heavy_hitters import planted_stream

from dpstream import serial
from dpstream.heavy_hitters import CMSHeap, LazyHH, PunctualHH
from dpstream.noise import noise_mode
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS

ALL = [CMS, CS, PunctualCMS, PunctualCS, LazyCMS, LazyCS]
PRIVATE = [PunctualCMS, PunctualCS, LazyCMS, LazyCS]
COUNTERS = [("binary", "stored"), ("binary", "derived"), ("honaker", "stored"), ("blt", "stored"), ("blt", "derived")]
KW = {"width": 7, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": 600, "seed": 11}
KEYS = np.arange(-5, 60)


def _stream(n: int, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).zipf(1.4, n) % 50).astype(np.int64)


def _releases(sketch) -> tuple[np.ndarray, np.ndarray]:
    return sketch.query_many(KEYS), sketch.variance_many(KEYS)


# -- round trip --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("counter", "node_noise"), COUNTERS)
@pytest.mark.parametrize("cls", PRIVATE)
def test_round_trip_equality_is_not_vacuous(cls, counter, node_noise):
    """Another noise seed (same hashes) releases other values.

    So the round trip's bitwise equality (``test_serial_roundtrip``) compares noise, not only the exact counts.
    """
    stream = _stream(600)
    original = cls(**KW, counter=counter, node_noise=node_noise)
    other = cls(**{**KW, "seed": 12}, counter=counter, node_noise=node_noise)
    other._params = original._params
    original.extend(stream)
    other.extend(stream)
    assert not np.array_equal(other.query_many(KEYS), original.query_many(KEYS))


_CHILD = """
import sys
import numpy as np
from dpstream import sketches
rest = (np.random.default_rng(0).zipf(1.4, 600) % 50).astype(np.int64)[233:]
for path in sys.argv[1:]:
    name = path.rsplit("/", 1)[1].split(".")[0]
    sketch = getattr(sketches, name).from_bytes(open(path, "rb").read())
    sketch.extend(rest)
    np.save(path + ".npy", sketch.query_many(np.arange(-5, 60)), allow_pickle=False)
"""


def test_restored_in_a_fresh_process(tmp_path):
    """No in-process cache (the BLT optimisation, numba, the generator) is needed for an exact restore."""
    stream = _stream(600)
    originals = {tmp_path / "LazyCMS.bin": LazyCMS(**KW, counter="blt"),
                 tmp_path / "PunctualCS.bin": PunctualCS(**KW, node_noise="derived"),
                 tmp_path / "LazyCS.bin": LazyCS(**KW, counter="blt", node_noise="derived", estimator="trimmed_mean")}
    for path, sketch in originals.items():
        sketch.extend(stream[:233])
        path.write_bytes(sketch.to_bytes())
    subprocess.run([sys.executable, "-c", _CHILD, *map(str, originals)], check=True, env=child_env())
    for path, sketch in originals.items():
        sketch.extend(stream[233:])
        np.testing.assert_array_equal(np.load(f"{path}.npy"), sketch.query_many(KEYS))


@pytest.mark.parametrize("cls", ALL)
def test_round_trip_before_any_update(cls):
    sketch = cls(**KW)
    restored = cls.from_bytes(sketch.to_bytes())
    stream = _stream(300, seed=1)
    sketch.extend(stream)
    restored.extend(stream)
    np.testing.assert_array_equal(sketch.query_many(KEYS), restored.query_many(KEYS))


def test_noiseless_test_sketch_stays_uncertified():
    sketch = LazyCMS._uncertified_noiseless(**KW)
    sketch.extend(_stream(100))
    restored = LazyCMS.from_bytes(sketch.to_bytes())
    assert restored.certified is False and restored.kappa == 0.0
    restored.extend(_stream(50, seed=2))
    assert np.all(restored.variance_many(KEYS) == 0)


def test_noise_mode_is_restored():
    with noise_mode("secure"):
        sketch = PunctualCMS(**KW)
    restored = PunctualCMS.from_bytes(sketch.to_bytes())
    assert restored._state.counters._noise.mode == "secure"


def test_a_lazy_hh_header_whose_threshold_scan_would_not_fit_is_refused():
    """A horizon of 2^40 in the header: the smooth counter's variance scan is refused, not allocated (MemoryError)."""
    original = LazyHH(k=2, k_tilde=8, epsilon=2.0, delta=1e-3, beta=5e-4, horizon=600, seed=4, counter="smooth",
                      node_noise="derived")
    version, header, payload = fuzz_split(original.to_bytes())
    header["args"]["horizon"] = 1 << 40
    with pytest.raises(serial.SerialError, match="working tables"):
        LazyHH.from_bytes(fuzz_frame(json.dumps(header).encode(), payload, version))


@pytest.mark.parametrize("node_noise", ["stored", "derived"])
def test_lazy_hh_restored_mid_stream_reports_the_same(node_noise):
    stream, heavy = planted_stream(3000, seed=3)
    kw = {"k": 4, "k_tilde": 64, "epsilon": 50.0, "delta": 1e-3, "beta": 5e-4, "horizon": stream.size, "seed": 4,
          "node_noise": node_noise}
    original = LazyHH(**kw)
    original.extend(stream[:1000])  # 1000 = 15 k~ + 40: candidates and a pending block held
    restored = LazyHH.from_bytes(original.to_bytes())
    reported = set()
    for lo, hi in [(1000, 1024), (1024, 1600), (1600, 3000)]:
        original.extend(stream[lo:hi])
        restored.extend(stream[lo:hi])
        a, b = original.estimate(), restored.estimate()
        assert a.time == b.time
        np.testing.assert_array_equal(a.items, b.items)
        np.testing.assert_array_equal(a.estimates, b.estimates)
        np.testing.assert_array_equal(original.candidates, restored.candidates)
        reported |= set(a.items.tolist())
    assert set(heavy.tolist()) <= reported  # non-empty outputs were compared
    assert restored.to_bytes() == original.to_bytes()


@pytest.mark.parametrize("make", [
    lambda: CMSHeap(k=3, horizon=2000, width=16, seed=1),
    lambda: PunctualHH(k=3, universe_size=60, epsilon=2.0, delta=1e-3, horizon=2000, width=8, period=50, seed=1),
], ids=["CMSHeap", "PunctualHH"])
def test_baseline_trackers_round_trip(make):
    stream = _stream(2000, seed=5)
    original = make()
    original.extend(stream[:1003])
    restored = type(original).from_bytes(original.to_bytes())
    for lo, hi in [(1003, 1500), (1500, 2000)]:
        original.extend(stream[lo:hi])
        restored.extend(stream[lo:hi])
        a, b = original.estimate(), restored.estimate()
        assert a.time == b.time and a.items.size > 0
        np.testing.assert_array_equal(a.items, b.items)
        np.testing.assert_array_equal(a.estimates, b.estimates)


# -- bad bytes ---------------------------------------------------------------------------------------------

@pytest.fixture
def lazy_bytes() -> bytes:
    sketch = LazyCMS(**KW)
    sketch.extend(_stream(100))
    return sketch.to_bytes()


def test_rejects_bad_magic(lazy_bytes):
    with pytest.raises(ValueError, match="bad magic b'NOTASKET'"):
        LazyCMS.from_bytes(b"NOTASKET" + lazy_bytes[8:])


def test_rejects_unsupported_version(lazy_bytes):
    data = lazy_bytes[:8] + (serial.FORMAT_VERSION + 1).to_bytes(2, "little") + lazy_bytes[10:]
    with pytest.raises(ValueError, match=f"format version {serial.FORMAT_VERSION + 1} was written by a newer dpstream"):
        LazyCMS.from_bytes(data)


def test_rejects_another_class(lazy_bytes):
    with pytest.raises(ValueError, match="hold a LazyCMS, not a LazyCS: restore them with LazyCMS.from_bytes"):
        LazyCS.from_bytes(lazy_bytes)


def test_rejects_every_truncation(lazy_bytes):
    for n in range(len(lazy_bytes)):
        with pytest.raises(ValueError, match="truncated data"):
            LazyCMS.from_bytes(lazy_bytes[:n])


def test_rejects_trailing_and_corrupted_bytes(lazy_bytes):
    with pytest.raises(ValueError, match="3 unexpected trailing bytes"):
        LazyCMS.from_bytes(lazy_bytes + b"abc")
    flipped = bytearray(lazy_bytes)
    flipped[-20] ^= 1  # a bit of the last array
    with pytest.raises(ValueError, match="checksum mismatch"):
        LazyCMS.from_bytes(bytes(flipped))
    with pytest.raises(TypeError, match="needs bytes"):
        LazyCMS.from_bytes("not bytes")


def _framed(header: bytes) -> bytes:
    body = serial.MAGIC + (1).to_bytes(2, "little") + len(header).to_bytes(4, "little") + header
    return body + zlib.crc32(body).to_bytes(4, "little")


def test_rejects_corrupt_header():
    negative = {"class": "LazyCMS", "args": {}, "state": {}, "arrays": [["x", "<i8", [-1]]]}
    for header in (b"{not json", json.dumps(negative).encode(), b'{"class": "LazyCMS"}'):
        with pytest.raises(ValueError, match="corrupt header"):
            LazyCMS.from_bytes(_framed(header))
    missing_args = {"class": "LazyCMS", "args": {"width": 3}, "state": {}, "arrays": []}
    with pytest.raises(ValueError, match="corrupt header for LazyCMS: missing key 'depth'"):
        LazyCMS.from_bytes(_framed(json.dumps(missing_args).encode()))


def _repacked(data: bytes, cls_name: str, edit) -> bytes:
    """The bytes re-packed (valid checksum) after ``edit(header, arrays)``: state the format cannot vouch for."""
    header, arrays = serial.unpack(data, cls_name)
    edit(header, arrays)
    return serial.pack(header["class"], header["args"], header["state"], arrays)


def test_rejects_state_that_does_not_fit_the_arguments(lazy_bytes):
    def wrong_shape(header, arrays):
        arrays["pending"] = arrays["pending"][:, :-1]

    def missing(header, arrays):
        arrays.pop("pending")

    def other_sigma(header, arrays):
        header["state"]["sigma"] *= 1.01

    def t_beyond_horizon(header, arrays):
        header["state"]["t"] = KW["horizon"] + 1

    for edit, message in [(wrong_shape, "array 'pending': stored int32\\[3, 6\\], expected int32\\[3, 7\\]"),
                          (missing, "missing \\['pending'\\]"),
                          (other_sigma, "sigma in the bytes is .* refusing to continue"),
                          (t_beyond_horizon, "t=601 is not an integer in \\[0, 600\\]")]:
        with pytest.raises(ValueError, match=message):
            LazyCMS.from_bytes(_repacked(lazy_bytes, "LazyCMS", edit))



def test_bytes_naming_a_module_never_import_it(lazy_bytes, tmp_path, monkeypatch):
    """A received state naming ``counter="evilmod:f"`` is refused before anything imports ``evilmod``."""
    (tmp_path / "evilmod_r33.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def own_counter(header, arrays):
        header["args"]["counter"] = "evilmod_r33:f"

    with pytest.raises(ValueError, match="names module 'evilmod_r33', which is not imported"):
        LazyCMS.from_bytes(_repacked(lazy_bytes, "LazyCMS", own_counter))
    assert not (tmp_path / "ran").exists()
    assert "evilmod_r33" not in sys.modules

# -- merge -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("hash_family", ["modp", "multiply_shift"])
@pytest.mark.parametrize("cls", [CMS, CS])
def test_merge_equals_sketch_of_concatenated_stream(cls, hash_family):
    a_items, b_items = _stream(250, seed=6), _stream(300, seed=7)
    a, b, whole = (cls(**KW, hash_family=hash_family) for _ in range(3))
    a.extend(a_items)
    b.extend(b_items)
    whole.extend(np.concatenate([a_items, b_items]))
    before = a.to_bytes(), b.to_bytes()
    merged = a.merge(b)
    assert merged.t == whole.t == 550
    np.testing.assert_array_equal(merged._state.cells(), whole._state.cells())
    np.testing.assert_array_equal(merged.query_many(KEYS), whole.query_many(KEYS))
    assert (a.to_bytes(), b.to_bytes()) == before  # operands unchanged


def test_merge_mismatches_are_named():
    base = CMS(**KW)
    base.extend(_stream(400))
    cases = [(CS(**KW), "cannot merge a CS into a CMS"),
             (CMS(**{**KW, "width": 8}), "width=7 here, 8 in other"),
             (CMS(**{**KW, "depth": 4}), "depth=3 here, 4 in other"),
             (CMS(**{**KW, "horizon": 700}), "horizon=600 here, 700 in other"),
             (CMS(**KW, hash_family="multiply_shift"), "hash_family='modp' here, 'multiply_shift' in other"),
             (CMS(**{**KW, "seed": 12}), "hash parameters differ")]
    for other, message in cases:
        with pytest.raises(ValueError, match=message):
            base.merge(other)
    long = CMS(**KW)
    long.extend(_stream(201))
    with pytest.raises(ValueError, match="t = 400 \\+ 201 = 601 would exceed horizon=600"):
        base.merge(long)


@pytest.mark.parametrize("cls", PRIVATE)
def test_private_merge_is_refused_with_the_reason(cls):
    with pytest.raises(ValueError, match="refused for private sketches.*cannot keep updating as ONE mechanism"):
        cls(**KW).merge(cls(**KW))
    with pytest.raises(ValueError, match="refused for private sketches"):
        (CMS if cls in (PunctualCMS, LazyCMS) else CS)(**KW).merge(cls(**KW))
