"""States saved by an earlier dpstream restore and answer as they did (``saved_states``, ``tests/data/states``).

Each file holds the bytes one counter or sketch wrote, what it released then and what it released after more of the
stream. The restored object must release the same: integers (steps, times, items) exactly; floats within
``RTOL`` relative plus ``ATOL`` absolute, since the files were written on another CPU whose last bits may differ.
The bytes must also read back as the same bytes at the current format (nothing lost on the way in): those the
format's migrations (``serial.MIGRATIONS``) make of them.
"""

import json
import struct
import zlib

import numpy as np
import pytest
from saved_states import CONTINUE, DIR, fixtures
from serial_cases import BY_NAME, SPLIT

from dpstream import serial

RTOL = 1e-9
ATOL = 1e-9
FILES = sorted(DIR.glob("*.npz"))
REFUSED = DIR.parent / "refused"
"""States an earlier dpstream wrote that this one refuses, each test naming why."""
QUICK = ("LazyCMS-binary-stored", "LazyCS-binary-derived", "PunctualCMS-blt-stored", "LazyHH-smooth-stored",
         "GaussBM-binary-stored")
"""The sketch files of the default suite (every counter file is in it); the others have the ``long`` mark."""
PARAMS = [pytest.param(f, id=f.stem, marks=() if "-" not in f.stem or f.stem in QUICK else pytest.mark.long)
          for f in FILES]


def _same(stored: np.ndarray, now: np.ndarray, what: str) -> None:
    now = np.asarray(now)
    assert now.shape == stored.shape, what
    if stored.dtype.kind in "biu":
        np.testing.assert_array_equal(now, stored, err_msg=what)
    else:
        np.testing.assert_allclose(now, stored, rtol=RTOL, atol=ATOL, err_msg=what)


def test_fixtures_cover_the_counters_and_sketches():
    names = {f.stem.split("-")[0] for f in FILES}
    assert {"BinaryTree.stored", "BinaryTree.discrete_secure", "HonakerTree.stored", "BLTCounter.stored",
            "BLTCounter.derived", "SmoothBinary.stored", "LaplaceTree.stored", "LaplaceTree.discrete_secure_stored",
            "HybridDerived", "SqrtFactorisation.stored", "SqrtFactorisation.derived", "LazyCMS", "LazyCS",
            "PunctualCMS", "LazyHH", "GaussBM"} <= names
    assert sorted(f.stem for f in FILES) == sorted(STEMS)  # a file for every counter and sketch pair, none stale
    assert len(FILES) >= 100


@pytest.mark.parametrize("path", PARAMS)
def test_saved_state_restores_and_answers_the_same(path):
    saved = np.load(path)
    data = saved["state"].tobytes()
    obj = serial.from_bytes(data)
    case = BY_NAME[type(obj).__name__]
    assert obj.to_bytes() == _current(data)
    at_save = [k for k in saved.files if k.startswith("at_save_")]
    for i, value in enumerate(case.releases(obj, SPLIT)):
        _same(saved[f"at_save_{i}"], value, f"{path.stem} at save, release {i}")
    assert len(at_save) == i + 1
    case.feed(obj, SPLIT, CONTINUE)
    for i, value in enumerate(case.releases(obj, CONTINUE)):
        _same(saved[f"continued_{i}"], value, f"{path.stem} continued, release {i}")


def _current(data: bytes) -> bytes:
    """``data`` as the current format writes it: its migrated header and arrays, packed again."""
    header, arrays = serial.unpack(data)
    return serial.pack(header["class"], header["args"], header["state"], arrays)


def _with_version(data: bytes, version: int) -> bytes:
    body = data[:8] + struct.pack("<H", version) + data[10:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def test_newer_format_is_refused_naming_what_to_do():
    data = np.load(DIR / "BinaryTree.stored.npz")["state"].tobytes()
    with pytest.raises(serial.SerialError, match="newer dpstream.*upgrade"):
        serial.from_bytes(_with_version(data, serial.FORMAT_VERSION + 1))


def test_older_format_without_migration_is_refused_naming_how_to_migrate():
    data = np.load(DIR / "BinaryTree.stored.npz")["state"].tobytes()
    with pytest.raises(serial.SerialError, match="format version 0.*dpstream that wrote it"):
        serial.from_bytes(_with_version(data, 0))


def test_older_format_is_migrated(monkeypatch):
    data = np.load(DIR / "BinaryTree.stored.npz")["state"].tobytes()
    seen = []

    def migrate(header, arrays):
        seen.append(header["class"])
        return header, arrays

    monkeypatch.setattr(serial, "MIGRATIONS", {**serial.MIGRATIONS, 0: migrate})
    restored = serial.from_bytes(_with_version(data, 0))
    assert seen == ["StoredBinary"]  # the file's format-1 tag, before version 1's migration renames it
    assert restored.to_bytes() == _current(data)  # written back at the current version


def test_a_format_1_counter_of_a_renamed_class_restores_as_its_factorisation_with_its_node_noise():
    # format 1 wrote one class per (factorisation, node noise): version 2 reads each as the factorisation's class
    # with the node noise it stood for, and refuses it when the migration is missing
    for stem, cls, noise in [("BinaryTree.derived", "BinaryTree", "derived"),
                             ("HonakerTree.discrete_secure_stored", "HonakerTree", "discrete_secure_stored"),
                             ("SmoothBinary.discrete_secure", "SmoothBinary", "discrete_secure")]:
        data = np.load(DIR / f"{stem}.npz")["state"].tobytes()
        assert struct.unpack_from("<H", data, 8)[0] == 1
        obj = serial.from_bytes(data)
        assert (type(obj).__name__, obj.node_noise) == (cls, noise)
        assert type(obj).from_bytes(data).node_noise == noise
        header = serial.unpack(obj.to_bytes())[0]
        assert (header["class"], header["args"]["node_noise"]) == (cls, noise)
    data = np.load(DIR / "BinaryTree.stored.npz")["state"].tobytes()
    with pytest.raises(serial.SerialError, match="the bytes hold a BinaryTree, not a HonakerTree"):
        serial.unpack(data, "HonakerTree")


@pytest.mark.parametrize("version", (1, 2))
def test_a_format_2_counter_of_a_class_per_noise_restores_as_its_factorisation_with_its_node_noise(version):
    # formats 1 and 2 wrote the Toeplitz, BLT and Laplace counters as one class per node noise, the stored one without
    # node_noise: version 3 reads each as the factorisation's class with the node noise it stood for
    # the derived BLT of those formats built its generation tables with LAPACK's QR: read as the factorisation's
    # class, then refused (``blt.BLOCK_QR``)
    data = _with_version(np.load(REFUSED / "BLTCounter.derived.lapack_qr.npz")["state"].tobytes(), version)
    assert serial.unpack(data)[0]["class"] == "BLTCounter" and _raw_header(data)["class"] == "DerivedBLT"
    with pytest.raises(serial.SerialError, match="block_qr in the bytes is None"):
        serial.from_bytes(data)
    for stem, old, cls, noise in [("BLTCounter.stored", "BLTCounter", "BLTCounter", "stored"),
                                  ("SqrtFactorisation.derived", "DerivedSqrtFactorisation", "SqrtFactorisation",
                                   "derived"),
                                  ("BandedSqrt16.derived", "DerivedBandedSqrt16", "BandedSqrt16", "derived"),
                                  ("BandedSqrt64.stored", "BandedSqrt64", "BandedSqrt64", "stored"),
                                  ("UnboundedFactorisation.derived", "DerivedUnboundedFactorisation",
                                   "UnboundedFactorisation", "derived"),
                                  ("LaplaceTree.discrete_secure_stored", "DiscreteLaplaceTree", "LaplaceTree",
                                   "discrete_secure_stored"),
                                  ("LaplaceTree.stored", "LaplaceTree", "LaplaceTree", "stored")]:
        data = _with_version(np.load(DIR / f"{stem}.npz")["state"].tobytes(), version)
        assert serial.unpack(data)[0]["class"] == cls and "node_noise" not in _raw_header(data)["args"]
        assert _raw_header(data)["class"] == old
        obj = serial.from_bytes(data)
        assert (type(obj).__name__, obj.node_noise) == (cls, noise)
        assert type(obj).from_bytes(data).node_noise == noise
        header = serial.unpack(obj.to_bytes())[0]
        assert (header["class"], header["args"]["node_noise"]) == (cls, noise)
    data = _with_version(np.load(DIR / "BLTCounter.derived.npz")["state"].tobytes(), 2)
    with pytest.raises(serial.SerialError, match="the bytes hold a BLTCounter, not a DerivedBLT"):
        serial.unpack(data, "DerivedBLT")


def _raw_header(data: bytes) -> dict:
    """The header as written, before any migration."""
    length = struct.unpack_from("<I", data, 10)[0]
    return json.loads(data[14:14 + length])


def test_a_format_2_state_is_refused_without_its_migration_naming_how_to_migrate(monkeypatch):
    data = _with_version(np.load(DIR / "BLTCounter.derived.npz")["state"].tobytes(), 2)
    monkeypatch.setattr(serial, "MIGRATIONS", {1: serial.MIGRATIONS[1]})
    with pytest.raises(serial.SerialError, match="version 2 .*no migration from version 2.*dpstream that wrote it"):
        serial.from_bytes(data)


def test_a_format_1_state_is_refused_without_its_migration_naming_how_to_migrate(monkeypatch):
    data = np.load(DIR / "BinaryTree.discrete_secure_ct.npz")["state"].tobytes()
    monkeypatch.setattr(serial, "MIGRATIONS", {})
    with pytest.raises(serial.SerialError, match="version 1 .*no migration from version 1.*dpstream that wrote it"):
        serial.from_bytes(data)


def _same_header(stored: dict, now: dict, what: str) -> None:
    """Two headers equal: strings, integers and structure exactly, floats within ``RTOL`` and ``ATOL``."""
    if isinstance(stored, dict):
        assert isinstance(now, dict) and sorted(now) == sorted(stored), what
        for key in stored:
            _same_header(stored[key], now[key], f"{what}.{key}")
    elif isinstance(stored, list):
        assert isinstance(now, list) and len(now) == len(stored), what
        for i, (a, b) in enumerate(zip(stored, now, strict=True)):
            _same_header(a, b, f"{what}[{i}]")
    elif isinstance(stored, float):
        assert now == pytest.approx(stored, rel=RTOL, abs=ATOL), what
    else:
        assert now == stored and type(now) is type(stored), what


STEMS = {stem: (case, options) for stem, case, options in fixtures()}


@pytest.mark.parametrize("path", PARAMS)
def test_a_fresh_object_writes_and_releases_what_its_saved_state_holds(path):
    """Built afresh from the same seed and fed the same stream, an object writes the saved state and releases the same.

    The guard of a rewrite of the counters (their classes, sources or kernels): the same seeds must give the same
    releases and the same written state as the code that wrote the file. Integers exactly, floats within ``RTOL``.
    """
    saved = np.load(path)
    case, options = STEMS[path.stem]
    obj = case.build(**options)
    case.feed(obj, 0, SPLIT)
    (header, arrays), (fresh_header, fresh_arrays) = serial.unpack(saved["state"].tobytes()), serial.unpack(
        obj.to_bytes())
    _same_header(header, fresh_header, f"{path.stem} header")
    assert list(fresh_arrays) == list(arrays), path.stem
    for name, value in arrays.items():
        _same(value, fresh_arrays[name], f"{path.stem} state array {name}")
    for i, value in enumerate(case.releases(obj, SPLIT)):
        _same(saved[f"at_save_{i}"], value, f"{path.stem} fresh at save, release {i}")
    case.feed(obj, SPLIT, CONTINUE)
    for i, value in enumerate(case.releases(obj, CONTINUE)):
        _same(saved[f"continued_{i}"], value, f"{path.stem} fresh continued, release {i}")


def test_a_derived_blt_state_built_with_lapacks_qr_is_refused():
    """Written before the generation tables had their own QR (``blt.BLOCK_QR``): its noise moved with the CPU."""
    saved = np.load(REFUSED / "BLTCounter.derived.lapack_qr.npz")
    with pytest.raises(serial.SerialError, match="block_qr in the bytes is None"):
        serial.from_bytes(saved["state"].tobytes())
