"""``dpstream watch --host-cap``: at most N packets a host per epoch reach LazyHH, and the host-level statement."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from test_watch import SMALL, run_watcher, zipf_sources

from dpstream.heavy_hitters._host_cap import PLACEHOLDER, PLACEHOLDER_KEY, HostCap
from dpstream.heavy_hitters.epochs import PACKET_MOVES, EpochWatcher, WatchConfig, statement
from dpstream.heavy_hitters.lazy_hh import LazyHH
from dpstream.privacy.composition import compose, group
from dpstream.watch import main


def capped_reference(keys: np.ndarray, cap: int) -> np.ndarray:
    """The cap by a Python dict, packet by packet (the test's reference)."""
    seen: dict[int, int] = {}
    out = []
    for key in keys.tolist():
        seen[key] = seen.get(key, 0) + 1
        out.append(key if seen[key] <= cap else PLACEHOLDER)
    return np.array(out, dtype=np.int64)


def test_cap_equals_a_dict_in_any_pieces() -> None:
    rng = np.random.default_rng(3)
    keys = np.concatenate([rng.integers(0, 300, 20_000), rng.integers(-(1 << 62), 1 << 62, 5_000)])
    rng.shuffle(keys)
    cap = HostCap(7, capacity=16)  # a small table: it grows (rehashes) several times on the way
    got = np.concatenate([cap.apply(part) for part in np.array_split(keys, 9)])
    np.testing.assert_array_equal(got, capped_reference(keys, 7))
    assert cap.hosts == np.unique(keys).size
    with pytest.raises(ValueError, match="reserved"):
        cap.apply(np.array([PLACEHOLDER]))


def test_a_host_contributes_at_most_n_packets_an_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    fed: list[tuple[int, np.ndarray]] = []
    extend = LazyHH.extend

    def recording(self: LazyHH, items: np.ndarray) -> None:
        fed.append((id(self), np.asarray(items).copy()))
        extend(self, items)

    estimate = LazyHH.estimate
    reported: list[np.ndarray] = []

    def noting(self: LazyHH) -> object:
        out = estimate(self)
        reported.append(out.items)
        return out

    monkeypatch.setattr(LazyHH, "extend", recording)
    monkeypatch.setattr(LazyHH, "estimate", noting)
    sizes = [16384, 32768, 8192]  # two whole epochs and the first two releases of the third
    keys = zipf_sources(sum(sizes), 11)  # three hosts with 25% of the packets each
    lines = run_watcher(keys, epsilon=0.5, host_cap=20)
    trackers = list(dict.fromkeys(t for t, _ in fed))
    assert len(trackers) == 3 and len(lines) == 4 + 8 + 2
    start = 0
    for tracker, size in zip(trackers, sizes, strict=True):
        stream = np.concatenate([items for t, items in fed if t == tracker])
        raw = keys[start:start + size].astype(np.int64)
        start += size
        assert stream.size == size  # the epoch keeps its length: capped packets become the placeholder
        np.testing.assert_array_equal(stream, capped_reference(raw, 20))  # the counts restart every epoch
        hosts, counts = np.unique(stream[stream != PLACEHOLDER], return_counts=True)
        raw_hosts, raw_counts = np.unique(raw, return_counts=True)
        np.testing.assert_array_equal(hosts, raw_hosts)
        np.testing.assert_array_equal(counts, np.minimum(raw_counts, 20))
        assert raw_counts.max() > 50 * 20  # the heavy hosts were capped, by thousands of packets
    # the placeholder (most of the stream) is reported by LazyHH under its canonical key (at this seed, in one
    # release), never by the watcher
    assert any(PLACEHOLDER_KEY in items for items in reported)
    assert all(item["label"].startswith(("10.", "11.")) for line in lines for item in line["items"])
    assert all("host" in line["privacy"] for line in lines)


@pytest.mark.parametrize("cap", [1, 2, 5])
def test_host_statement_is_group_privacy_of_n(cap: int) -> None:
    config = WatchConfig(**{**SMALL, "epsilon": 1.0, "host_cap": cap})
    watcher = EpochWatcher(config, None, print)
    base = watcher.tracker.privacy
    eps, delta = base.epsilon, base.delta
    p = watcher.privacy
    host = p["host"]
    assert host["cap"] == cap and host["epsilon_per_epoch"] == cap * eps
    exact = delta * sum(math.exp(i * eps) for i in range(cap))
    assert host["delta_per_epoch"] == pytest.approx(exact, rel=1e-12)
    assert host["delta_per_epoch"] <= cap * math.exp((cap - 1) * eps) * delta * (1 + 1e-12)
    # one packet while the cap is on: a group of 3
    assert p["epsilon"] == 3 * eps
    assert p["delta"] == pytest.approx(delta * (1 + math.exp(eps) + math.exp(2 * eps)), rel=1e-12)
    # a host present in E epochs: basic composition of its per-epoch statement
    over = compose(*[group(base, cap)] * 4)
    assert over.epsilon == pytest.approx(4 * cap * eps) and over.delta == pytest.approx(4 * exact, rel=1e-12)
    # without the cap the statement is the packet-level one, unchanged
    assert statement(base) == {k: v for k, v in statement(base, None).items()}
    assert "host" not in statement(base) and statement(base)["epsilon"] == eps and PACKET_MOVES == 3


def test_host_cap_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = zipf_sources(8192, 2)
    source = tmp_path / "keys.txt"
    source.write_text("\n".join(str(k) for k in keys.tolist()) + "\n")
    small = ["--k", "8", "--k-tilde", "128", "--flush-every", "4", "--every", "4096", "--horizon", "16384",
             "--epsilon", "4", "--seed", "1", "--noise", "derived"]
    assert main([str(source), *small, "--host-cap", "2", "--state", str(tmp_path / "s.json")]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 2 and all(line["privacy"]["host"]["cap"] == 2 for line in lines)
    host = lines[0]["privacy"]["host"]
    assert f"host cap 2: ({host['epsilon_per_epoch']:g}, {host['delta_per_epoch']:.3g})-DP per host" in err
    assert json.loads((tmp_path / "s.json").read_text())["config"]["host_cap"] == 2
    # a restart with another cap is refused (the ledger holds the cap), and so is a cap with no guarantee
    assert main([str(source), *small, "--host-cap", "3", "--state", str(tmp_path / "s.json")]) == 2
    assert "host_cap=3 (the state's 2) differ" in capsys.readouterr().err
    assert main([str(source), *small, "--host-cap", "9", "--state", str(tmp_path / "t.json")]) == 2
    assert "no guarantee" in capsys.readouterr().err
    assert main([str(source), *small, "--host-cap", "0", "--state", str(tmp_path / "u.json")]) == 2
    assert "--host-cap 0: allowed: a finite number >= 1" in capsys.readouterr().err


def test_the_cap_is_stable_as_the_statement_assumes() -> None:
    """One replaced packet changes at most 3 capped packets; one host removed changes at most N.

    Exhaustive over every position of 200 random short streams with few hosts, so caps bind often.
    """
    rng = np.random.default_rng(5)
    worst_packet = worst_host = 0
    for _ in range(200):
        cap = int(rng.integers(1, 4))
        keys = rng.integers(0, 4, 24)
        capped = HostCap(cap).apply(keys)
        for i in range(keys.size):
            for other in range(5):
                changed = keys.copy()
                changed[i] = other
                worst_packet = max(worst_packet, int((HostCap(cap).apply(changed) != capped).sum()))
        for host in range(4):  # the host's packets replaced by placeholders, which no host's count sees
            neighbour = HostCap(cap).apply(np.where(keys == host, 1000 + np.arange(keys.size), keys))
            neighbour[keys == host] = PLACEHOLDER
            diff = int((neighbour != capped).sum())
            assert diff == min(int((keys == host).sum()), cap)  # its counted packets, and nothing of other hosts
            worst_host = max(worst_host, diff)
    assert worst_packet == PACKET_MOVES  # reached, never passed
    assert worst_host == 3  # a host with 3 counted packets
