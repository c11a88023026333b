"""Item aliases (review 4, finding 1): an item whose canonical key equals a heavy item's is reported under that key.

And the keyed item hash behind the labels of one's own data: a string crafted against the public (unkeyed) hash does
not rename a heavy hitter, and distinct items collide with the Carter-Wegman bound (L - 1) / (p - 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from capture_files import VALID
from scipy import stats

from dpstream.data.capture import IPV6_KEY_RANGE, scan_capture
from dpstream.data.items import items_stream
from dpstream.data.live import CaptureKeys
from dpstream.hashing import (
    MERSENNE_P,
    canonical_key,
    collision_bound,
    draw_item_key,
    item_limbs,
    keyed_key,
    keyed_keys,
)
from dpstream.heavy_hitters import LazyHH, PunctualHH
from dpstream.watch import main

HEAVY = 7
ALIAS = -3510659095137107454
"""An int64 whose canonical key is 7: XXH64 of 8 bytes is a public bijection, so it was solved for (review 4)."""

APPLE_ALIAS = "uwdfqzkgI1ia6nRi"
"""A string whose unkeyed canonical key (xxh64 mod p) equals "apple"'s, found by inverting XXH64's last round."""


def test_the_aliases_collide_under_the_public_hash() -> None:
    assert canonical_key(ALIAS) == HEAVY and canonical_key(APPLE_ALIAS) == canonical_key("apple")


def alias_streams(length: int = 1 << 13, seed: int = 1, share: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """A stream with item 7 at ``share``, and its copy with one light item replaced by the alias of 7."""
    rng = np.random.default_rng(seed)
    base = rng.integers(1000, 100_000, length)
    base[rng.random(length) < share] = HEAVY
    first = int(np.flatnonzero(base != HEAVY)[0])
    aliased = base.copy()
    aliased[first] = ALIAS
    merged = base.copy()
    merged[first] = HEAVY
    return aliased, merged


def test_lazy_hh_counts_an_alias_as_the_item_it_aliases() -> None:
    aliased, merged = alias_streams()
    outputs = []
    for stream in (aliased, merged):
        hh = LazyHH(k=8, k_tilde=64, epsilon=4.0, delta=1e-3, beta=5e-4, horizon=stream.size, seed=3)
        hh.extend(stream)
        outputs.append(hh.estimate())
    # the same keys, the same seed: the same output, in which 7 is reported and the alias is not an item of its own
    assert outputs[0].pairs() == outputs[1].pairs() and HEAVY in outputs[0].items and ALIAS not in outputs[0].items
    assert hh.query(ALIAS) == hh.query(HEAVY) > 0  # a query is by key too


def test_a_restored_state_with_a_raw_alias_candidate_keeps_keys() -> None:
    hh = LazyHH(k=2, k_tilde=8, epsilon=4.0, delta=1e-3, beta=5e-4, horizon=64, seed=0)
    hh._candidates = np.array([ALIAS, HEAVY], dtype=np.int64)  # as a state saved before candidates were keys
    restored = LazyHH.from_bytes(hh.to_bytes())
    assert restored.candidates.tolist() == [HEAVY]


def test_punctual_hh_still_refuses_items_outside_its_universe() -> None:
    hh = PunctualHH(k=2, universe_size=16, width=4, epsilon=1.0, delta=1e-3, horizon=8, seed=0)
    with pytest.raises(ValueError, match="must lie in"):
        hh.extend(np.array([ALIAS]))


def test_watch_reports_the_alias_line_under_the_heavy_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aliased, merged = alias_streams(1 << 14, seed=2, share=0.9)
    args = ["--k", "2", "--k-tilde", "64", "--flush-every", "1", "--every", "4096", "--horizon", "16384",
            "--epsilon", "4", "--seed", "1", "--noise", "derived"]
    lines = []
    for name, stream in (("aliased", aliased), ("merged", merged)):
        path = tmp_path / f"{name}.txt"
        path.write_text("\n".join(map(str, stream.tolist())) + "\n")
        assert main([str(path), "--state", str(tmp_path / f"{name}.json"), *args]) == 0
        lines.append([json.loads(line)["items"] for line in capsys.readouterr().out.splitlines()])
    labels = [[item["label"] for item in release] for release in lines[0]]
    assert lines[0] == lines[1] and [str(HEAVY)] in labels and all(str(ALIAS) not in r for r in labels)


def write_lines(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_string_aimed_at_the_public_hash_does_not_rename_a_heavy_hitter(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    words = np.where(rng.random(2000) < 0.5, "apple", np.char.add("w", rng.integers(0, 500, 2000).astype(str)))
    plain, planted = list(words), list(words)
    plain[100], planted[100] = "pear", APPLE_ALIAS  # neighbours: one line changed
    key = draw_item_key(9)
    a = items_stream(write_lines(tmp_path / "a.txt", plain), seed=9)
    b = items_stream(write_lines(tmp_path / "b.txt", planted), seed=9)
    apple = keyed_key("apple", key)
    assert a.labels[apple] == b.labels[apple] == "apple"  # the unkeyed hash gave the last value's: the alias
    assert b.items[100] == keyed_key(APPLE_ALIAS, key) != apple and b.labels[int(b.items[100])] == APPLE_ALIAS
    limbs = item_limbs(len(APPLE_ALIAS))
    assert b.label_delta == collision_bound(len(set(planted)), limbs) < 1e-15


# -- the keyed hash: exact and universal ----------------------------------------------------------------------------

def test_keyed_keys_of_an_array_equal_the_scalar_hash() -> None:
    key = draw_item_key(0)
    items = ["apple", "", "dög", "x" * 22, b"\x00", b"", -1, 2**64 - 1, MERSENNE_P, MERSENNE_P - 1, 5, -(2**63),
             2**70, -(2**70)]
    assert keyed_keys(np.array(items, dtype=object), key).tolist() == [keyed_key(v, key) for v in items]
    ints = np.array([-1, 5, MERSENNE_P, -(2**63), 2**62, ALIAS], dtype=np.int64)
    assert keyed_keys(ints, key).tolist() == [keyed_key(int(v), key) for v in ints]
    assert keyed_keys(ints.view(np.uint64), key).tolist() == keyed_keys(ints, key).tolist()
    assert keyed_key(5, key) == 5 and keyed_key(-1, key) == keyed_key(2**64 - 1, key)  # as canonical_key writes them
    assert keyed_key("a", key) != keyed_key("a\x00", key) != keyed_key(b"a\x00\x00", key)  # the length is a limb


def near_pairs(rng: np.random.Generator, n: int, size: int) -> tuple[list[bytes], list[bytes]]:
    """Pairs of random ``size``-byte strings (n of them) that differ in one byte, or by a trailing zero byte."""
    firsts, seconds = [], []
    for i in range(n):
        x = rng.integers(0, 256, size, dtype=np.uint8)
        if i % 4 == 0:
            firsts.append(x.tobytes())
            seconds.append(x.tobytes() + b"\x00")
            continue
        y = x.copy()
        j = int(rng.integers(size))
        y[j] ^= np.uint8(rng.integers(1, 256))
        firsts.append(x.tobytes())
        seconds.append(y.tobytes())
    return firsts, seconds


def test_distinct_items_collide_as_rarely_as_the_bound_says() -> None:
    """100 000 near pairs (one byte apart, or a zero byte longer) under one key, and 20 000 keys on the aliases.

    Each pair collides with probability <= (L - 1) / (p - 1) (L = 4 limbs): the expected number of collisions is
    below 1e-12, so one collision fails the test (a hash ignoring a limb or the length would collide at ~1/4).
    """
    rng = np.random.default_rng(11)
    firsts, seconds = near_pairs(rng, 100_000, 20)
    key = draw_item_key(12)
    a = keyed_keys(np.array(firsts, dtype=object), key)
    b = keyed_keys(np.array(seconds, dtype=object), key)
    assert 100_000 * collision_bound(1, item_limbs(21)) < 1e-12 and not (a == b).any()
    keys = [draw_item_key(s) for s in range(20_000)]
    assert not any(keyed_key(ALIAS, k) == HEAVY or keyed_key(APPLE_ALIAS, k) == keyed_key("apple", k) for k in keys)


def test_a_keyed_key_is_uniform_over_the_secret() -> None:
    """Pr[h(x) = w] = 1/p over the key: h("apple") mod 16 over 16 384 keys passes chi-square at level 1e-3."""
    values = np.array([keyed_key("apple", draw_item_key(s)) % 16 for s in range(16_384)])
    counts = np.bincount(values, minlength=16)
    assert stats.chisquare(counts).pvalue > 1e-3


# -- IPv6 sources of a capture: keyed the same way ------------------------------------------------------------------

def test_ipv6_keys_are_the_keyed_hash_of_the_source_under_the_scans_secret(tmp_path: Path) -> None:
    data = VALID["pcapng_interfaces.pcapng"]()  # IPv6 sources fe80::i for i = 0, 7, 14
    path = tmp_path / "v.pcapng"
    path.write_bytes(data)
    keys = np.concatenate(list(scan_capture(path, ipv6="key", seed=5)))
    key = draw_item_key(5)
    sources = [b"\xfe\x80" + bytes(13) + bytes([i]) for i in (0, 7, 14)]
    assert keys[keys >= 1 << 32].tolist() == [(1 << 32) + keyed_key(s, key) % IPV6_KEY_RANGE for s in sources]
    other = np.concatenate(list(scan_capture(path, ipv6="key", seed=6)))
    assert (other[other < 1 << 32] == keys[keys < 1 << 32]).all()  # IPv4 keys are the addresses
    assert set(other[other >= 1 << 32].tolist()).isdisjoint(keys[keys >= 1 << 32].tolist())
    live = [CaptureKeys(data[:64], "v.pcapng", "key").feed(data) for _ in range(2)]  # a new secret a call
    assert set(live[0][live[0] >= 1 << 32].tolist()).isdisjoint(live[1][live[1] >= 1 << 32].tolist())
