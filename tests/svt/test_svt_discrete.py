"""The sparse vector family with ``svt_noise="discrete_secure"``: outputs from the draws, accuracy, flags, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse

from dpstream.secure import laplace, samplers
from dpstream.svt import AboveThreshold, NumericSparse, Sparse, ThresholdMonitor, ThresholdMonitorEvolving
from dpstream.svt.monitor import MonitorCore
from dpstream.svt.sparse import GeneralisedSparse

DS = "discrete_secure"
ANSWERS = np.array([3, 40, 12, 55, 38, 41, 90, 0, 47, 60, 39, 44, 70, 10, 52], dtype=np.int64)


def _sampler_draw(mech: GeneralisedSparse | MonitorCore, role: str, call: int, run: int, index: int) -> int:
    """The draw the documented nonce (role | call << 4, run, index) gives, straight from the sampler."""
    t, s = mech.grids[role]  # type: ignore[misc]
    nonce = np.array([[laplace.nonce_word(role, call), run, index]], dtype=np.uint32)
    return int(samplers.discrete_laplace_rational_batch(mech._keyed.key, nonce, np.int64(t), np.int64(s),  # type: ignore[union-attr]
                                                        np.int64(laplace.laplace_vcap(t)), samplers.new_state())[0])


def _reference_sparse(mech: GeneralisedSparse, answers: np.ndarray, noise: dict) -> tuple[np.ndarray, np.ndarray]:
    """Sparse by its definition, one run and one query at a time, on Python integers."""
    runs, m = noise["query"].shape
    out, released = np.full((runs, m), -1, np.int8), np.zeros((runs, m), np.int64)
    for r in range(runs):
        count = 0
        for i in range(m):
            if count >= mech.cutoff:
                break
            theta = mech.threshold + int(noise["threshold"][r, count if mech.redraw else 0])
            top = int(answers[i]) + int(noise["query"][r, i]) >= theta
            out[r, i] = int(top)
            if top:
                if mech.release:
                    released[r, i] = int(answers[i]) + int(noise["answer"][r, count])
                count += 1
    return out, released


@pytest.mark.parametrize("make", [
    lambda: AboveThreshold(epsilon=0.7, threshold=45, seed=3, svt_noise=DS),
    lambda: Sparse(epsilon=1.0, threshold=45, c=3, seed=4, svt_noise=DS),
    lambda: Sparse(epsilon=1.0, threshold=45, c=3, delta=1e-6, seed=5, svt_noise=DS),
    lambda: NumericSparse(epsilon=2.0, threshold=45, c=4, seed=6, svt_noise=DS),
])
def test_outputs_equal_a_reference_from_the_same_draws(make) -> None:
    mech = make()
    noise = mech.draw_noise(ANSWERS.size, n_runs=30)
    res = mech.run(ANSWERS, n_runs=30, noise=noise)
    out, released = _reference_sparse(mech, ANSWERS, noise)
    np.testing.assert_array_equal(res.outcomes, out)
    if mech.release:
        np.testing.assert_array_equal(res.released, released)
    # the draws are the sampler's at the documented nonces (call 0 of this key)
    for role in ("threshold", "query"):
        for r, i in [(0, 0), (7, 0), (29, noise[role].shape[1] - 1)]:
            assert noise[role][r, i] == _sampler_draw(mech, role, 0, r, i)
    # run() drawing its own noise (the next call: fresh streams) equals the same mechanism fed that call's draws
    again = make()
    again.draw_noise(ANSWERS.size, n_runs=30)  # call 0
    lazy = again.run(ANSWERS, n_runs=30)  # call 1, drawn chunk by chunk
    fed = make()
    fed.draw_noise(1, 1)
    np.testing.assert_array_equal(lazy.outcomes, fed.run(ANSWERS, n_runs=30, noise=fed.draw_noise(ANSWERS.size,
                                                                                                     30)).outcomes)
    assert not np.array_equal(lazy.noise["query"], noise["query"])


def test_chunked_drawing_equals_drawing_at_once() -> None:
    # run() without noise draws query noise in chunks of CHUNK queries, keyed by the query index: across a chunk
    # boundary the values equal one bulk draw of the same call
    from dpstream.svt.sparse import CHUNK

    answers = np.zeros(CHUNK + 10, dtype=np.int64)  # far below the threshold: no run halts, every chunk is drawn
    lazy = Sparse(epsilon=1.0, threshold=10**6, c=2, seed=9, svt_noise=DS).run(answers, n_runs=2)
    bulk = Sparse(epsilon=1.0, threshold=10**6, c=2, seed=9, svt_noise=DS).draw_noise(answers.size, 2)
    np.testing.assert_array_equal(lazy.noise["query"], bulk["query"])
    np.testing.assert_array_equal(lazy.noise["threshold"], bulk["threshold"])
    assert (lazy.outcomes == 0).all()


def _reference_monitor(mech: MonitorCore, q: np.ndarray, counts: np.ndarray, noise: dict) -> np.ndarray:
    """Kaplan, Mansour, Stemmer Alg. 3 by its definition on Python integers (q: 0/1 matrix)."""
    runs, m = noise["w"].shape
    out = np.zeros((runs, m), np.int8)
    for r in range(runs):
        live, counter = [int(c) for c in counts], [0] * counts.size
        for i in range(m):
            value = sum(live[a] for a in range(counts.size) if q[i, a])
            if value + int(noise["w"][r, i]) + min(int(noise["v"][r, i]), math.floor(mech.calibration.cap)) \
                    >= mech.threshold:
                out[r, i] = 1
                for a in np.flatnonzero(q[i]):
                    counter[a] += 1
                    live[a] = 0 if counter[a] >= mech.k else live[a]
    return out


@pytest.mark.parametrize("cls", [ThresholdMonitor, ThresholdMonitorEvolving])
def test_monitor_outputs_equal_a_reference_from_the_same_draws(cls) -> None:
    rng = np.random.default_rng(12)
    q = (rng.random((40, 6)) < 0.4).astype(float)
    counts = np.array([300, 2, 150, 0, 90, 500])
    mech = cls(epsilon=2.0, delta=1e-6, threshold=250, k=3, seed=8, svt_noise=DS)
    noise = mech.draw_noise(40, 12)
    res = mech.run(sparse.csr_matrix(q), counts, n_runs=12, noise=noise)
    np.testing.assert_array_equal(res.outcomes, _reference_monitor(mech, q, counts, noise))
    assert 0 < res.outcomes.mean() < 1  # both outcomes occur: the comparison is not vacuous
    assert noise["w"][3, 5] == _sampler_draw(mech, "w", 0, 3, 5) and noise["v"][0, 0] == _sampler_draw(mech, "v", 0,
                                                                                                          0, 0)


def _discrete_pmf(b: float, k: np.ndarray) -> np.ndarray:
    """The pmf of the discrete Laplace of scale b on ``k``: P(k) = (1 - q) / (1 + q) q^|k|, q = exp(-1/b)."""
    q = math.exp(-1 / b)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def _continuous_top(d: float, b1: float, b2: float) -> float:
    """P(nu - rho >= d) for nu ~ Lap(b1), rho ~ Lap(b2) independent (the difference's tail in closed form)."""
    tail = (b1**2 * math.exp(-abs(d) / b1) - b2**2 * math.exp(-abs(d) / b2)) / (2 * (b1**2 - b2**2))
    return tail if d >= 0 else 1 - tail


RUNS = 100_000


@pytest.mark.parametrize("margin", [-9, 0, 6])
def test_accuracy_matches_the_continuous_svt_up_to_half_a_unit(margin: int) -> None:
    # AboveThreshold on one query of answer 100 - margin at threshold 100, eps = 0.5 (scales 4 and 8): TOP iff
    # nu - rho >= margin. The discrete TOP rate is exactly P(D >= margin) for D the difference of two discrete
    # Laplaces at the grid scales; on integers ">= margin" is "> margin - 1/2", so the continuous SVT at the same eps
    # with the threshold half a unit lower is its counterpart (continuity correction): their exact rates must agree
    # to 0.002 (without the half unit they differ by 0.015 to 0.021), and each empirical rate must lie within 5
    # binomial standard deviations of its exact value (a false failure has probability < 1e-6 per check).
    disc = AboveThreshold(epsilon=0.5, threshold=100, seed=20 + margin, svt_noise=DS)
    cont = AboveThreshold(epsilon=0.5, threshold=100 - 0.5, seed=40 + margin)
    answers = np.array([100 - margin])
    b_thr, b_query = (t / s for t, s in (disc.grids["threshold"], disc.grids["query"]))  # type: ignore[misc]
    k = np.arange(-60 * 8, 60 * 8 + 1)  # both scales are about 8 or less: mass beyond 60 scales below 1e-26
    diff = np.convolve(_discrete_pmf(b_query, k), _discrete_pmf(b_thr, k)[::-1])  # nu - rho on 2 k.min() .. 2 k.max()
    support = np.arange(2 * k.min(), 2 * k.max() + 1)
    exact_disc = float(diff[support >= margin].sum())
    exact_cont = _continuous_top(margin - 0.5, cont.query_scale, cont.threshold_scale)
    assert abs(exact_disc - exact_cont) < 0.002
    for mech, exact in ((disc, exact_disc), (cont, exact_cont)):
        rate = float((mech.run(answers, n_runs=RUNS).outcomes[:, 0] == 1).mean())
        assert abs(rate - exact) <= 5 * math.sqrt(exact * (1 - exact) / RUNS), (type(mech).__name__, rate, exact)


def test_flags_keys_and_privacy() -> None:
    seeded = Sparse(epsilon=1.0, threshold=10, c=2, seed=1, svt_noise=DS)
    assert seeded.certified and not seeded.deployable and seeded.privacy.notion == "computational"  # type: ignore[union-attr]
    assert NumericSparse(epsilon=1.0, threshold=10, c=2, svt_noise=DS).privacy.notion == "computational"
    assert Sparse(epsilon=1.0, threshold=10, c=2).privacy.notion == "pure"  # type: ignore[union-attr]
    assert not seeded.run(ANSWERS).deployable
    private = Sparse(epsilon=1.0, threshold=10, c=2, svt_noise=DS)
    assert private.deployable and private.run(ANSWERS).deployable
    assert private._keyed.key.tobytes().hex() not in repr(private._keyed)  # type: ignore[union-attr]
    scaled = Sparse(epsilon=1.0, threshold=10, c=2, kappa=0.5, svt_noise=DS)
    assert not scaled.certified and not scaled.deployable
    assert not Sparse(epsilon=1.0, threshold=10, c=2).deployable  # continuous noise
    # grids round the calibrated scales up
    for role, scale in (("threshold", seeded.threshold_scale), ("query", seeded.query_scale)):
        t, s = seeded.grids[role]  # type: ignore[misc]
        assert t / s >= scale and (t - 1) / s < scale
    # ThresholdMonitor's statements and flags: test_svt_monitor_discrete.py
    monitor = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=50, k=3, svt_noise=DS)
    assert monitor.certified and monitor.deployable and monitor.privacy.notion == "computational"  # type: ignore[union-attr]
    evolving = ThresholdMonitorEvolving(epsilon=1.0, delta=1e-6, threshold=50, k=3, svt_noise=DS)
    assert evolving.privacy.notion == "computational"  # type: ignore[union-attr]
    assert ThresholdMonitorEvolving(epsilon=1.0, delta=1e-6, threshold=50, k=3).privacy.notion == "approximate"  # type: ignore[union-attr]


def test_monitor_state_holds_the_key_and_the_call_count() -> None:
    q, counts = sparse.csr_matrix(np.eye(4)), np.array([60, 10, 0, 49])
    monitor = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=50, k=3, svt_noise=DS)  # key from secrets
    monitor.run(q, counts, n_runs=3)
    data = monitor.to_bytes()
    assert monitor._keyed.key.tobytes() in data  # type: ignore[union-attr]  # SECRET state file
    restored = ThresholdMonitor.from_bytes(data)
    assert restored.svt_noise == DS and restored._keyed.calls == 1  # type: ignore[union-attr]
    np.testing.assert_array_equal(restored.draw_noise(4, 3)["w"], monitor.draw_noise(4, 3)["w"])


@pytest.mark.parametrize(("build", "match"), [
    (lambda: Sparse(epsilon=1.0, threshold=10.5, c=2, svt_noise=DS), "integer threshold .* got 10.5"),
    (lambda: AboveThreshold(epsilon=1.0, threshold=2**61, svt_noise=DS), "<= 2\\^60, got 2305843009213693952"),
    (lambda: Sparse(epsilon=1.0, threshold=10, c=2, svt_noise="discrete"), "unknown svt_noise 'discrete'; allowed"),
    (lambda: Sparse(epsilon=1.0, threshold=10, c=2, svt_noise=DS).run(np.array([1.0, 2.5])),
     "integer answers .* got 2.5"),
    (lambda: Sparse(epsilon=1.0, threshold=10, c=2, svt_noise=DS).run(np.array([1, 2**62])),
     "integer answers of magnitude <= 2\\^60"),
    (lambda: Sparse(epsilon=1.0, threshold=10, c=2, svt_noise=DS).run(np.array([[0.5, 1.0]]), np.array([3, 4])),
     "f_i\\(x\\) in \\{0, 1\\} .* got 0.5"),
    (lambda: ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=5, k=2, svt_noise=DS).run(
        np.array([[1.0, 1.0]]), np.array([3, 4.5])), "integer counts per atom .* got 4.5"),
    (lambda: ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=5.25, k=2, svt_noise=DS), "got 5.25"),
])
def test_bad_input_is_a_one_line_error(build, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        build()
    assert "\n" not in str(info.value)
