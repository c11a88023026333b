"""``from_bytes`` under a seeded 200 random mutations per serialised class (``fuzz_serial.py``; ``make fuzz``: 2,000).

The fuzzer runs in a child process whose address space is limited to 2 GB (a MemoryError, an allocation sized from
an unchecked header field, fails it); every mutation must end in ``SerialError`` or, for a re-framed mutation with a
valid checksum, in a faithfully read consistent state. The summary is the child's last output line.
"""

import json
import subprocess
import sys
import zlib

import pytest
from conftest import TESTS, child_env
from serial_cases import CASES

from dpstream import serial

PER_CLASS = 200


@pytest.mark.long
def test_seeded_fuzz_of_every_serialised_class():
    done = subprocess.run([sys.executable, str(TESTS / "fuzz_serial.py"), "--per-class", str(PER_CLASS), "--seed", "0"],
                          capture_output=True, text=True, env=child_env(OPENBLAS_NUM_THREADS="1"), timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["failed"] == 0
    assert set(summary["classes"]) == {case.name for case in CASES}
    for name, counts in summary["classes"].items():
        assert counts["mutations"] == PER_CLASS and counts["rejected"] + counts["faithful"] == PER_CLASS, name
        assert counts["rejected"] >= PER_CLASS // 2, name  # most mutations break the bytes: the fuzzer bites


def test_the_address_space_limit_catches_an_unchecked_allocation():
    """Without the reader's size bounds, huge header sizes reach an allocation and the fuzzer fails with MemoryError."""
    command = [sys.executable, str(TESTS / "fuzz_serial.py"), "--per-class", "300", "--seed", "0", "--only", "LazyCMS",
               "--kinds", "header_value", "--without-size-checks"]
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(OPENBLAS_NUM_THREADS="1"),
                          timeout=600)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "MemoryError: an allocation sized from an unchecked header field" in done.stdout


def test_a_flipped_count_byte_is_caught():
    sketch = CASES[0].build()
    CASES[0].feed(sketch, 0, 100)
    data = bytearray(sketch.to_bytes())
    data[-5] ^= 1  # the last byte of the last array, before the checksum
    with pytest.raises(serial.SerialError, match="checksum mismatch"):
        type(sketch).from_bytes(bytes(data))


def _renamed(name: str) -> bytes:
    """CASES[0]'s bytes with the header's class set to ``name`` and the checksum made right."""
    data = CASES[0].build().to_bytes()
    header_len = int.from_bytes(data[10:14], "little")
    header = json.loads(data[14:14 + header_len])
    header["class"] = name
    text = json.dumps(header).encode()
    body = data[:10] + len(text).to_bytes(4, "little") + text + data[14 + header_len:-4]
    return body + zlib.crc32(body).to_bytes(4, "little")


@pytest.mark.parametrize("read", [serial.from_bytes, CASES[0].cls.from_bytes], ids=["serial", "class"])
def test_unknown_class_name_is_refused(read):
    with pytest.raises(serial.SerialError, match="unknown class name 'Popen'"):
        read(_renamed("Popen"))


@pytest.mark.parametrize("base", ["Counter", "FactorisedCounter", "NodeTree", "ToeplitzCounter"])
def test_an_abstract_base_is_neither_restorable_nor_listed_as_known(base):
    assert base in serial.REGISTRY  # registered on subclassing, before its abstract methods are known
    with pytest.raises(serial.SerialError, match=f"unknown class name '{base}'") as err:
        serial.from_bytes(_renamed(base))
    known = str(err.value).split("(known: ")[1]
    assert base not in known.rstrip(")").split(", ") and "LazyCMS" in known
