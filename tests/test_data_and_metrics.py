"""Zipf streams and the accuracy metrics."""

import numpy as np
import pytest
from scipy import stats

from dpstream.data import zipf_stream
from dpstream.metrics import average_relative_error, precision_recall, prefix_top_k, release_times, top_k


def test_zipf_rank_frequencies_follow_the_power_law():
    """Chi-square goodness of fit of the 20 heaviest ranks (+ the rest) at p = 1e-6 over 2^18 draws."""
    length, universe, skew = 2**18, 10_000, 1.3
    stream = zipf_stream(length=length, universe=universe, skew=skew, seed=3)
    _, counts = np.unique(stream, return_counts=True)
    observed = np.sort(counts)[::-1]
    weights = np.arange(1, universe + 1, dtype=float) ** -skew
    p = weights / weights.sum()
    obs = np.append(observed[:20], length - observed[:20].sum())
    exp = np.append(p[:20], 1 - p[:20].sum()) * length
    # Sorting observed counts biases the tail ranks slightly; the top 20 are well separated at this skew.
    assert stats.chisquare(obs, exp).pvalue > 1e-6


def test_zipf_ids_are_permuted_so_heaviest_is_not_zero():
    stream = zipf_stream(length=50_000, universe=1000, skew=2.0, seed=1)
    heaviest = top_k(stream, 3)[0]
    assert not np.array_equal(np.sort(heaviest), [0, 1, 2])
    assert stream.min() >= 0 and stream.max() < 1000


def test_zipf_is_seeded_and_cached(tmp_path):
    a = zipf_stream(length=1000, universe=100, skew=1.1, seed=np.random.SeedSequence(5), cache_dir=tmp_path)
    files = list((tmp_path / "zipf").glob("*.npy"))
    b = zipf_stream(length=1000, universe=100, skew=1.1, seed=np.random.SeedSequence(5), cache_dir=tmp_path)
    c = zipf_stream(length=1000, universe=100, skew=1.1, seed=np.random.SeedSequence(6), cache_dir=tmp_path)
    assert len(files) == 1 and np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"length": 0}, "length must be an integer >= 1, got 0"),
    ({"universe": -3}, "universe must be an integer >= 1, got -3"),
    ({"skew": 0}, "skew must be a number > 0, got 0"),
])
def test_zipf_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        zipf_stream(**kwargs)


def test_top_k_and_are():
    stream = np.array([5, 5, 5, 2, 2, 9, 7, 7, 7, 7])
    items, counts = top_k(stream, 2)
    assert items.tolist() == [7, 5] and counts.tolist() == [4, 3]
    assert average_relative_error(counts, np.array([5.0, 3.0])) == pytest.approx(0.125)


def test_precision_recall():
    assert precision_recall(np.array([1, 2, 3, 4]), np.array([2, 4, 6])) == (0.5, pytest.approx(2 / 3))
    assert precision_recall(np.array([], dtype=int), np.array([1])) == (1.0, 0.0)


@pytest.mark.parametrize("horizon", [2**20, 65_536, 262_144, 26_600_000, 5000, 2**11])
def test_release_times_are_log_spaced_and_end_at_t(horizon):
    times = release_times(horizon, 16)
    first = max(1000, -(-horizon // 64))
    first += (first & (first - 1)) == 0  # a power of two is moved up by one
    assert times.size == 16 and times[-1] == horizon and times[0] == first
    assert np.all(np.diff(times) > 0)
    powers = times[(times & (times - 1)) == 0]
    assert set(powers.tolist()) <= {horizon}
    ratios = times[1:] / times[:-1]  # a geometric grid: consecutive ratios equal up to rounding (+1 nudges)
    assert np.allclose(ratios, (horizon / times[0]) ** (1 / 15), rtol=0.05 if horizon > 5000 else 0.01)


def test_release_times_short_streams_and_bad_input():
    assert release_times(800, 16).tolist() == [800]
    assert release_times(1003, 16).tolist() == [1000, 1001, 1002, 1003]
    assert release_times(2**20, 1).tolist() == [2**20]
    with pytest.raises(ValueError, match="release_times must be an integer >= 1, got 0"):
        release_times(2**20, 0)


@pytest.mark.parametrize("block", [7, 1000, 1 << 22])  # blocks that split the prefixes anywhere, and one block
def test_prefix_top_k_equals_top_k_of_each_prefix(block):
    stream = zipf_stream(length=30_000, universe=2000, skew=1.1, seed=4)
    stream[:20] = 7  # ties and a tiny prefix with fewer than k distinct items
    times = np.array([5, 20, 21, 999, 1000, 17_777, 29_000])  # the last item(s) after the last time are never read
    for t, (items, counts) in zip(times, prefix_top_k(stream, 15, times, block), strict=True):
        want_items, want_counts = top_k(stream[:t], 15)
        assert items.tolist() == want_items.tolist() and counts.tolist() == want_counts.tolist()
    with pytest.raises(ValueError, match="strictly increasing"):
        list(prefix_top_k(stream, 15, np.array([10, 10])))
