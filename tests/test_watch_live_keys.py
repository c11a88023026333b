"""``dpstream watch``'s reader: a line's key from that line alone, one IPv6 secret a source, a left file read out."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from test_watch import SMALL

from dpstream.data import live
from dpstream.data.live import LineKeys, source_keys
from dpstream.hashing import canonical_key
from dpstream.heavy_hitters._host_cap import PLACEHOLDER, HostCap
from dpstream.watch import main

BIG = 9007199254740993  # 2^53 + 1: a float64 holds it as 2^53


def id_lines(sixth: str) -> bytes:
    """20,000 lines, about 90% of them the id 2^53 + 1, the rest ids above 2^53; line 6 is ``sixth``."""
    rng = np.random.default_rng(5)
    ids = np.where(rng.random(20_000) < 0.9, BIG, BIG + 2 * rng.integers(1, 1000, 20_000)).astype(np.int64)
    lines = [str(v) for v in ids.tolist()]
    lines[5] = sixth
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("sixth", ["99999999999999999999", "18446744073709551615", "-99999999999999999999", "1.5",
                                   "abc", "+0000000000000000000000000012"])
def test_one_line_never_changes_another_lines_key(sixth: str, tmp_path: Path) -> None:
    plain, odd = tmp_path / "X.txt", tmp_path / "Xp.txt"
    plain.write_bytes(id_lines("123"))
    odd.write_bytes(id_lines(sixth))  # in the same 4 MiB block as every other line
    keys, other = (np.concatenate(list(source_keys(str(p)))) for p in (plain, odd))
    assert keys.size == other.size == 20_000
    others = np.arange(20_000) != 5
    np.testing.assert_array_equal(other[others], keys[others])
    assert (keys == BIG).sum() > 17_000  # exactly 2^53 + 1, not rounded
    text = sixth.lstrip("+").lstrip("0")
    value = int(text) if text.lstrip("-").isdigit() else sixth
    want = value if isinstance(value, int) and -(1 << 63) <= value < 1 << 63 else canonical_key(value)
    assert other[5] == want  # its own key: the integer, or the canonical key of what does not fit int64


def test_an_item_is_keyed_alike_in_any_block() -> None:
    lines = [b"5", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809", b"x1", b"007",
             "١٢".encode()]
    alone = [LineKeys("s").feed(b"1\n" + line + b"\n")[1] for line in lines]
    together = LineKeys("s").feed(b"1\n" + b"\n".join(lines) + b"\n")[1:]
    np.testing.assert_array_equal(together, alone)
    assert alone[0] == 5 and alone[1] == (1 << 63) - 1 and alone[5] == 7
    assert alone[2] == canonical_key(1 << 63) and alone[3] == canonical_key(-(1 << 63) - 1)
    assert alone[4] == canonical_key("x1") and alone[6] == canonical_key("١٢")  # digits other than 0-9: text
    assert PLACEHOLDER not in alone


def v6_pcap(n: int) -> bytes:
    """A raw-IP pcap of ``n`` IPv6 packets from 2001:db8::1."""
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)
    pkt = bytes([0x60, 0, 0, 0, 0, 0, 59, 64]) + bytes.fromhex("20010db8000000000000000000000001") + bytes(16)
    for i in range(n):
        out += struct.pack("<IIII", i, 0, len(pkt), len(pkt)) + pkt
    return out


def test_an_ipv6_host_has_one_key_across_a_rotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    rot = tmp_path / "rot"
    rot.mkdir()
    (rot / "cap").write_bytes(v6_pcap(300))
    (rot / "cap1").write_bytes(v6_pcap(300))
    keys = [k.tolist() for k in source_keys(str(rot), ipv6="key")]
    assert len(keys) == 2 and len(set(keys[0] + keys[1])) == 1 and keys[0][0] >= 1 << 32
    fed: list[np.ndarray] = []
    apply = HostCap.apply

    def recording(self: HostCap, items: np.ndarray) -> np.ndarray:
        fed.append(apply(self, items))
        return fed[-1]

    monkeypatch.setattr(HostCap, "apply", recording)
    options = ["--k", str(SMALL["k"]), "--k-tilde", str(SMALL["k_tilde"]), "--flush-every", "4", "--every", "4096",
               "--horizon", "16384", "--epsilon", "4", "--seed", "1", "--noise", "derived"]
    assert main([str(rot), "--ipv6", "key", "--host-cap", "1", "--state", str(tmp_path / "s.json"), *options]) == 0
    stream = np.concatenate(fed)
    assert stream.size == 512 and (stream != PLACEHOLDER).sum() == 1  # one period of both files: one counted packet
    capsys.readouterr()


def test_a_left_file_is_read_to_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rot = tmp_path / "rot"
    rot.mkdir()
    (rot / "cap").write_bytes(b"1\n2\n")
    names = live.Rotation.names
    calls = [0]

    def writer_acts(self: live.Rotation) -> list[str]:
        calls[0] += 1
        if calls[0] == 2:  # the first check after cap's end: the writer flushes its tail, closes, opens cap1
            with open(rot / "cap", "ab") as fh:
                fh.write(b"3\n4\n")
            (rot / "cap1").write_bytes(b"5\n")
        return names(self)

    monkeypatch.setattr(live.Rotation, "names", writer_acts)
    got = {}
    for name, blocks in live.streams(str(rot), follow=True, poll=0.01):
        if name.endswith("cap1"):
            break
        got[Path(name).name] = b"".join(bytes(block) for block in blocks)  # a block lives until the next read
    assert calls[0] >= 2 and got == {"cap": b"1\n2\n3\n4\n"}
