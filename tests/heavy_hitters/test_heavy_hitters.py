"""LazyHH (Holland, Alg. 6), its calibration, its baselines, the heavy-hitter metrics and the Figure 4 trial."""

import math

import numpy as np
import pytest
import yaml
from conftest import ROOT

from dpstream.counters import COUNTERS
from dpstream.data import zipf_stream
from dpstream.heavy_hitters import CMSHeap, HeavyHitters, LazyHH, PunctualHH, _lazy_hh
from dpstream.heavy_hitters import thresholds as thresholds_module
from dpstream.heavy_hitters.metrics import (
    BlockPrefixCounts,
    PrefixCounts,
    evaluate,
    evaluate_prefix,
    summarise_release_times,
    summarise_steps,
)
from dpstream.heavy_hitters.thresholds import (
    SCAN_BYTES_PER_STEP,
    lazy_cms_noise_tail,
    noise_tail_working_bytes,
    noise_term,
    noise_term_closed_form,
    scans_variance,
    tau_many,
    thresholds,
)
from dpstream.metrics import release_times
from dpstream.privacy.calibration import gauss_bm_sigma
from dpstream.privacy.heavy_hitters import check_final_delta, final_delta, final_delta_epsilon_bound, lazy_hh_depth
from dpstream.privacy.statement import labels
from dpstream.sketches import LazyCMS
from dpstream.trials.heavy_hitters import load_trace, make_tracker, run_trial

BASE = {"k": 4, "k_tilde": 64, "epsilon": 4.0, "delta": 1e-3, "beta": 5e-4}


def planted_stream(length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two planted heavy items (35% and 30% of the stream) among 100 000 light ones, shuffled."""
    rng = np.random.default_rng(seed)
    heavy = np.array([7_000_001, 7_000_002])
    n1, n2 = int(0.35 * length), int(0.30 * length)
    light = rng.integers(0, 100_000, size=length - n1 - n2)
    stream = np.concatenate([np.full(n1, heavy[0]), np.full(n2, heavy[1]), light])
    return rng.permutation(stream), heavy


# -- calibration: exact accounting ---------------------------------------------------------------------

def test_depth_is_ceil_log2_of_4T_over_beta():
    assert lazy_hh_depth(2**20, 2**-10) == 32  # log2(2^22 / 2^-10) = 32 exactly
    assert lazy_hh_depth(26_600_000, 5e-4) == math.ceil(math.log2(4 * 26_600_000 / 5e-4)) == 38


def test_depth_meets_the_privacy_requirement_ln_2T_over_delta():
    for horizon in (10**3, 10**6, 10**8):
        for delta, beta in ((1e-3, 5e-4), (1e-6, 1e-7), (0.4, 0.3)):
            assert lazy_hh_depth(horizon, beta) >= math.log(2 * horizon / delta)


def test_gamma_closed_form_is_alg6_line4_with_log2():
    T, kt, eps, delta, d, beta = 2**20, 2**10, 0.5, 1e-3, 32, 2**-10
    expected = 3 * 10 / eps * math.sqrt(d * math.log(4 * T * d / beta) * math.log2(1.25 / delta))
    assert noise_term_closed_form(T, kt, eps, delta, d, beta) == pytest.approx(expected, rel=1e-12)


def test_gamma_covers_the_lemma4_noise_tail_of_the_actual_sketch():
    for T in (10**3, 10**5, 26_600_000):
        for kt in (8, 128, 1024):
            if kt <= T:
                d = lazy_hh_depth(T, 5e-4)
                tail = lazy_cms_noise_tail(T, kt, 0.5, 1e-3, d, 5e-4)
                assert noise_term(T, kt, 0.5, 1e-3, d, 5e-4) >= tail


def test_lemma4_tail_uses_the_lazy_cms_sigma():
    T, kt, d = 10**6, 100, 36
    steps = 10**4
    h = math.ceil(math.log2(steps + 1))
    sigma = gauss_bm_sigma(steps, 0.5, 1e-3, 2 * d)
    assert lazy_cms_noise_tail(T, kt, 0.5, 1e-3, d, 5e-4) == pytest.approx(
        sigma * math.sqrt(2 * h * math.log(4 * steps * kt * d / 5e-4)), rel=1e-12)


def test_thresholds_are_exactly_alg6_output():
    th = thresholds(t=1000, k=4, k_tilde=10, gamma=7.0)
    assert (th.lambda1, th.lambda2, th.tau1) == (17.0, 207.0, 250.0)
    assert th.tau2 == 100 + 17 + 2 * 207 and th.tau == th.tau2 + 1
    assert thresholds(t=10**6, k=4, k_tilde=10**4, gamma=7.0).tau == 250_001.0  # tau1 dominates


def test_tau_many_is_thresholds_tau_to_the_bit():
    times = np.concatenate([np.arange(1, 5000), np.array([2**20, 26_600_000, 10**12 + 7])])
    for k, k_tilde, gamma in ((4, 64, 123.456), (128, 128, 4242.4242), (3, 7, 0.1)):
        expected = [thresholds(int(t), k, k_tilde, gamma).tau for t in times]
        assert tau_many(times, k, k_tilde, gamma).tolist() == expected


def test_final_delta_is_2delta_times_three_halves_plus_e_eps_plus_delta():
    assert final_delta(0.5, 1e-3) == pytest.approx(2e-3 * (1.5 + math.exp(0.5) + 1e-3), rel=1e-15)


def test_a_delta_tilde_of_one_or_more_is_no_guarantee_and_not_certified(tmp_path):
    """Epsilon 10 at delta 1e-3: delta~ = 44.06, which guarantees nothing: no statement, labels say not certified."""
    hh = LazyHH(horizon=1000, **{**BASE, "epsilon": 10.0})
    assert hh.delta_tilde == pytest.approx(44.06, rel=1e-3)
    assert hh.privacy is None and not hh.certified
    assert labels(hh) == {"private": False, "certified": False, "deployable": False}
    bound = final_delta_epsilon_bound(1e-3)
    assert final_delta(bound * (1 - 1e-9), 1e-3) < 1.0 <= final_delta(bound * (1 + 1e-9), 1e-3)
    assert LazyHH(horizon=1000, **{**BASE, "epsilon": bound * (1 - 1e-9)}).certified
    with pytest.raises(ValueError, match=r"^epsilon must be below 6.212 at delta=0.001 \(LazyHH's delta~ .* is 44.06"):
        check_final_delta(10.0, 1e-3)
    assert final_delta(1e-3, 0.1860) < 1.0 <= final_delta(1e-3, 0.1862)
    with pytest.raises(ValueError, match=r"^delta must be below 0.1861 at epsilon=0.001"):  # no epsilon helps
        check_final_delta(1e-3, 0.3)
    with pytest.raises(ValueError, match=r"^epsilon must be below 6.212 at delta=0.001"):  # the trial refuses it
        run_trial(_params(tmp_path, "lazyhh", epsilon=10.0), np.random.SeedSequence(0))


def test_lazy_cms_noise_matches_the_sigma_gamma_is_derived_from():
    """The sketch LazyHH builds adds per-node noise of exactly the sigma the calibration assumes."""
    hh = LazyHH(horizon=4096, seed=1, **BASE)
    hh.extend(np.arange(4096) % 50)
    sigma = gauss_bm_sigma(math.ceil(4096 / 64), 4.0, 1e-3, 2 * hh.depth)
    steps = 4096 // 64  # every cell has taken this many GaussBM steps
    assert np.allclose(hh.sketch.variance(3), bin(steps).count("1") * sigma**2)


# -- validation ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "match"), [
    ({"k_tilde": 3}, "k_tilde must be an integer >= k = 4"),
    ({"k": 0}, "k must be an integer >= 1"),
    ({"k": -2}, "k must be an integer >= 1"),
    ({"beta": 0.0}, r"beta must be in the open interval \(0.0, 0.001\)"),
    ({"beta": 1e-3}, r"beta must be in the open interval \(0.0, 0.001\)"),
    ({"beta": 0.2}, r"beta must be in the open interval \(0.0, 0.001\)"),
    ({"delta": 0.5, "beta": 0.1}, r"delta must be in the open interval \(0.0, 0.5\)"),
    ({"epsilon": -1.0}, "epsilon must be a finite number > 0"),
])
def test_rejects_bad_parameters(change, match):
    with pytest.raises(ValueError, match=match):
        LazyHH(horizon=10_000, **{**BASE, **change})


def test_rejects_horizon_below_k_tilde():
    with pytest.raises(ValueError, match="horizon must be >= k_tilde = 64"):
        LazyHH(horizon=63, **BASE)


def test_rejects_stream_longer_than_horizon():
    hh = LazyHH(horizon=100, **BASE)
    with pytest.raises(ValueError, match="longer than horizon=100"):
        hh.extend(np.zeros(101, dtype=np.int64))


def test_rejects_non_integer_items():
    with pytest.raises(ValueError, match="1-D array of integers"):
        LazyHH(horizon=100, **BASE).extend(np.array([0.5, 1.5]))


# -- behaviour ---------------------------------------------------------------------------------------------

def test_output_changes_only_at_multiples_of_k_tilde():
    stream, _ = planted_stream(3000, seed=0)
    hh = LazyHH(horizon=stream.size, **{**BASE, "epsilon": 50.0})
    previous = hh.estimate()
    changes = []
    for t, x in enumerate(stream, start=1):
        hh.update(int(x))
        out = hh.estimate()
        assert out.time == t - t % 64
        if out is not previous:
            changes.append(t)
        previous = out
    assert changes == list(range(64, 3001, 64))


def test_extend_equals_update_loop_and_any_chunking():
    stream, _ = planted_stream(2000, seed=1)
    one = LazyHH(horizon=stream.size, seed=5, **BASE)
    for x in stream:
        one.update(int(x))
    many = LazyHH(horizon=stream.size, seed=5, **BASE)
    for chunk in np.array_split(stream, [1, 100, 101, 700, 1333]):
        many.extend(chunk)
    whole = LazyHH(horizon=stream.size, seed=5, **BASE)
    whole.extend(stream)
    for other in (many, whole):
        np.testing.assert_array_equal(other.candidates, one.candidates)
        np.testing.assert_array_equal(other.estimate().items, one.estimate().items)
        np.testing.assert_array_equal(other.estimate().estimates, one.estimate().estimates)


@pytest.mark.parametrize("node_noise", ["stored", "derived"])
@pytest.mark.parametrize("noiseless", [False, True])
def test_compiled_refreshes_equal_one_refresh_at_a_time(monkeypatch, node_noise, noiseless):
    """``extend`` over whole periods (``_lazy_hh.refreshes``, compiled) leaves the state and output of ``update``s.

    Estimates tie at the top-k~ cut (two candidates whose smallest row is the same cell; exact counts in the noiseless
    sketch): there the compiled loop hands the cut to numpy's argpartition (``keep_top``), as one refresh at a time
    does.
    """
    stream, _ = planted_stream(3000, seed=2)
    args = {**BASE, "k_tilde": 16, "horizon": stream.size, "seed": 7, "node_noise": node_noise}

    def tracker() -> LazyHH:
        hh = LazyHH(**args)
        if noiseless:
            hh._sketch = LazyCMS._uncertified_noiseless(width=16, depth=hh.depth, epsilon=hh.epsilon, delta=hh.delta,
                                                         horizon=stream.size, seed=7, node_noise=node_noise)
        return hh

    calls = {"refreshes": 0, "ties": 0}
    refreshes, keep_top = _lazy_hh.refreshes, _lazy_hh.keep_top

    def counted_refreshes(*a, **kw):
        calls["refreshes"] += 1
        return refreshes(*a, **kw)

    def counted_keep_top(*a, **kw):
        calls["ties"] += 1
        return keep_top(*a, **kw)

    monkeypatch.setattr(_lazy_hh, "refreshes", counted_refreshes)
    monkeypatch.setattr(_lazy_hh, "keep_top", counted_keep_top)
    whole = tracker()
    whole.extend(stream)
    assert calls["refreshes"] == 1 and calls["ties"] > 0
    one = tracker()
    for x in stream:
        one.update(int(x))
    assert calls["refreshes"] == 1  # one item at a time never holds a whole period
    np.testing.assert_array_equal(whole.candidates, one.candidates)
    np.testing.assert_array_equal(whole.estimate().items, one.estimate().items)
    np.testing.assert_array_equal(whole.estimate().estimates, one.estimate().estimates)
    assert whole.estimate().time == one.estimate().time == stream.size - stream.size % 16
    assert whole.to_bytes() == one.to_bytes()


@pytest.mark.parametrize("node_noise", ["stored", "derived"])
def test_compiled_refreshes_across_several_calls_equal_the_python_path(monkeypatch, node_noise):
    """Several ``REFRESH_ITEMS`` blocks with a period that does not divide them: compiled equals refresh by refresh.

    The compiled loop's later calls (their times, thresholds and noise offsets) leave the state and the outputs of
    the refresh-by-refresh path, bit for bit. A Zipf stream at a large epsilon puts items near the threshold, so
    thresholds taken at the wrong times change the reported sets (a loop that restarts its times at 0 each call fails).
    """
    stream = zipf_stream(length=3 * _lazy_hh.REFRESH_ITEMS + 1234, universe=3000, skew=1.1, seed=3)
    args = {**BASE, "k": 16, "k_tilde": 23, "epsilon": 50.0, "horizon": stream.size, "seed": 11,
            "node_noise": node_noise}
    calls = {"refreshes": 0}
    refreshes = _lazy_hh.refreshes

    def counted(*a, **kw):
        calls["refreshes"] += 1
        return refreshes(*a, **kw)

    def run() -> tuple[LazyHH, list[list[int]]]:
        hh, outputs = LazyHH(**args), []
        for chunk in np.array_split(stream, 7):
            hh.extend(chunk)
            outputs.append(hh.estimate().items.tolist())
        return hh, outputs

    monkeypatch.setattr(_lazy_hh, "refreshes", counted)
    compiled, compiled_outputs = run()
    assert calls["refreshes"] >= 3
    monkeypatch.setattr(_lazy_hh, "refreshes", lambda *a, **kw: None)  # every refresh through the Python path
    python, python_outputs = run()
    assert compiled_outputs == python_outputs
    np.testing.assert_array_equal(compiled.candidates, python.candidates)
    assert compiled.to_bytes() == python.to_bytes()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_heavy_items_reported_and_light_or_absent_never(seed):
    """At every output step t >= 16 384, both planted items are reported and no light or absent item is.

    The planted items have f_t ~ 0.35 t, 0.30 t, far above tau + lambda1; the light items have f_t << tau - lambda2.
    Lemma 6 makes this fail with probability <= beta = 5e-4 per seed (union over 3 seeds: 1.5e-3).
    """
    stream, heavy = planted_stream(2**18, seed)
    hh = LazyHH(horizon=stream.size, seed=100 + seed, **BASE)
    for pos in range(0, stream.size, 4096):
        hh.extend(stream[pos:pos + 4096])
        out = hh.estimate()
        if out.time >= 16_384:
            assert set(out.items.tolist()) == set(heavy.tolist())
        assert not ((out.items >= 100_000) & (out.items < 7_000_000)).any()  # never-seen items


def test_candidate_errors_stay_within_lemma6_bounds():
    """Lemma 6: every candidate's estimate at every output step lies in its interval.

    The interval is [f - gamma - k~, f + 2t/k~ + gamma], with probability >= 1 - beta = 1 - 5e-4.
    """
    rng = np.random.default_rng(3)
    stream = rng.zipf(1.3, size=2**16) % 5000
    hh = LazyHH(horizon=stream.size, seed=9, **BASE)
    for pos in range(0, stream.size, 64):
        hh.extend(stream[pos:pos + 64])
        t = hh.t
        est = hh.sketch.query_many(hh.candidates)
        items, counts = np.unique(stream[:t], return_counts=True)
        f = counts[np.searchsorted(items, hh.candidates)]
        th = hh.thresholds(t)
        assert np.all(est - f >= -th.lambda1) and np.all(est - f <= th.lambda2)


def test_cms_heap_finds_every_true_heavy_hitter():
    stream, heavy = planted_stream(50_000, seed=4)
    hh = CMSHeap(k=4, horizon=stream.size, width=2000, depth=3, seed=0)
    hh.extend(stream)
    assert set(hh.estimate().items.tolist()) == set(heavy.tolist())
    assert hh.estimate().time == 50_000 and hh.period == 4


def test_punctual_hh_refuses_a_large_universe_and_says_why():
    with pytest.raises(ValueError, match="queries every universe item at every output step"):
        PunctualHH(k=4, universe_size=2**20, epsilon=1.0, delta=1e-3, horizon=100, width=8)
    with pytest.raises(ValueError, match=r"must lie in \[0, universe_size=64\)"):
        PunctualHH(k=4, universe_size=64, epsilon=1.0, delta=1e-3, horizon=100, width=8).extend(np.array([64]))


def test_punctual_hh_reports_a_planted_item_on_a_small_universe():
    rng = np.random.default_rng(0)
    stream = np.where(rng.random(2048) < 0.6, 5, rng.integers(0, 64, 2048))
    hh = PunctualHH(k=4, universe_size=64, epsilon=4.0, delta=1e-3, horizon=stream.size, width=16, seed=0)
    hh.extend(stream)
    assert 5 in hh.estimate().items.tolist() and hh.estimate().time == 2048


# -- metrics -------------------------------------------------------------------------------------------

def test_evaluate_precision_recall_are_on_known_sets():
    items, counts = np.array([1, 2, 3, 4]), np.array([50, 30, 15, 5])  # t = 100, k = 4: true = {1, 2}
    reported = HeavyHitters(np.array([1, 3, 9]), np.array([55.0, 12.0, 20.0]), 100)
    m = evaluate(reported, items, counts, k=4)
    assert m["precision"] == pytest.approx(1 / 3) and m["recall"] == 0.5
    assert m["are"] == pytest.approx((5 / 50 + 3 / 15) / 2) and m["n_reported_unseen"] == 1


def test_precision_and_recall_are_nan_with_a_reason_when_undefined():
    items, counts = np.array([1, 2, 3, 4]), np.array([25, 25, 25, 25])  # t = 100, k = 2: no item has f >= 50
    nothing = evaluate(HeavyHitters(np.array([], dtype=np.int64), np.array([]), 100), items, counts, k=2)
    assert np.isnan(nothing["precision"]) and np.isnan(nothing["recall"]) and np.isnan(nothing["are"])
    assert nothing["pr_undefined"] == "precision undefined: nothing reported; recall undefined: no true heavy hitter"
    false_alarm = evaluate(HeavyHitters(np.array([1]), np.array([60.0]), 100), items, counts, k=2)
    assert false_alarm["precision"] == 0.0 and np.isnan(false_alarm["recall"])
    assert false_alarm["pr_undefined"] == "recall undefined: no true heavy hitter"
    missed = evaluate(HeavyHitters(np.array([], dtype=np.int64), np.array([]), 100), items, counts, k=4)
    assert np.isnan(missed["precision"]) and missed["recall"] == 0.0
    assert missed["pr_undefined"] == "precision undefined: nothing reported"
    defined = evaluate(HeavyHitters(np.array([1]), np.array([25.0]), 100), items, counts, k=4)
    assert (defined["precision"], defined["recall"], defined["pr_undefined"]) == (1.0, 0.25, "")


def test_prefix_counts_match_brute_force_at_every_step():
    rng = np.random.default_rng(0)
    stream = rng.zipf(1.5, 5000) % 300
    prefix = PrefixCounts(stream, k=8)
    rows = []
    for pos in range(0, 5000, 250):
        prefix.advance(250)
        items, counts = np.unique(stream[:pos + 250], return_counts=True)
        truth = items[counts >= (pos + 250) / 8]
        reported = HeavyHitters(truth[:2].astype(np.int64), np.ones(min(2, truth.size)), pos + 250)
        rows.append(prefix.evaluate(reported))
        assert rows[-1] == evaluate(reported, items, counts, k=8)
    assert summarise_steps(rows)["precision_steps_min"] == 1.0 and summarise_steps(rows)["steps"] == 20


@pytest.mark.parametrize("block", [1, 97, 250, 5000])
def test_block_prefix_counts_match_brute_force_at_every_step(block):
    rng = np.random.default_rng(1)
    stream = rng.zipf(1.5, 5000) % 300
    prefix = BlockPrefixCounts(k=8)
    for pos in range(0, 5000, block):
        end = min(pos + block, 5000)
        prefix.advance(stream[pos:end])
        items, counts = np.unique(stream[:end], return_counts=True)
        truth = items[counts >= end / 8]
        reported = HeavyHitters(np.r_[truth[:2], 10_000].astype(np.int64), np.ones(min(2, truth.size) + 1), end)
        assert prefix.evaluate(reported) == evaluate(reported, items, counts, k=8)


def test_release_time_means_leave_out_undefined_precision_and_recall():
    rows = [{"precision": 1.0, "recall": 0.0, "are": float("nan"), "n_reported": 0, "n_true": 2},  # P undefined
            {"precision": 0.5, "recall": 1.0, "are": 0.2, "n_reported": 2, "n_true": 0},  # R undefined
            {"precision": 0.25, "recall": 0.5, "are": 0.4, "n_reported": 4, "n_true": 2}]
    out = summarise_release_times(rows)
    assert out == {"n_release_times": 3, "precision_mean_t": 0.375, "recall_mean_t": 0.25,
                   "are_mean_t": pytest.approx(0.3)}
    assert np.isnan(summarise_release_times(rows[:1])["precision_mean_t"])


# -- the Figure 4 trial and experiments ------------------------------------------------------------------

def _params(tmp_path, mechanism, **extra):
    mech = {"name": mechanism, "trial": "dpstream.trials.heavy_hitters:run_trial", "private": True, "k": 16,
            "metrics_every_output": False}
    mech |= {"lazyhh": {"_target_": "dpstream.heavy_hitters.LazyHH", "k_tilde": 64, "beta": 5e-4,
                        "uses": ["epsilon", "delta"]},
             "cms_heap": {"_target_": "dpstream.heavy_hitters.CMSHeap", "period": None, "k_tilde": 64,
                          "uses": ["width", "depth", "memory_kb"]}}[mechanism]
    mech |= extra
    data = {"name": "caida_like_synthetic", "_target_": "dpstream.data.caida_like.synthetic_caida_like",
            "synthetic": True, "length": 40_000, "zipf_exponent": 1.0, "full_length": 26_600_000,
            "distinct_sources": 312_000, "trace_seed": 2019}
    return {"epsilon": 6.0, "delta": 1e-3, "width": 55, "depth": 3, "memory_kb": 20, "seed": 0, "trial": 0,
            "mechanism": mech, "data": data, "data_dir": str(tmp_path), "profile": {"name": "smoke"}}


@pytest.mark.parametrize("mechanism", ["lazyhh", "cms_heap"])
def test_trial_reports_metrics_at_the_end_and_at_every_output_step(tmp_path, mechanism):
    row = run_trial(_params(tmp_path, mechanism, metrics_every_output=True), np.random.SeedSequence(0, spawn_key=(0,)))
    assert row["output_time"] == 40_000 - 40_000 % row["output_period"]
    assert (0 <= row["precision"] <= 1) if row["n_reported"] else np.isnan(row["precision"])  # NaN: none reported
    assert 0 <= row["recall"] <= 1 and row["us_per_update"] > 0
    assert row["steps"] == 40_000 // row["output_period"]
    assert row["sketch_width"] == (64 if mechanism == "lazyhh" else 1666)
    again = run_trial(_params(tmp_path, mechanism), np.random.SeedSequence(0, spawn_key=(0,)))
    assert {k: again[k] for k in ("precision", "recall", "n_reported")} == pytest.approx(
        {k: row[k] for k in ("precision", "recall", "n_reported")}, nan_ok=True)


def test_trial_rejects_unknown_mechanism_keys(tmp_path):
    with pytest.raises(ValueError, match="LazyHH takes no k_tilda; its arguments: beta"):
        run_trial(_params(tmp_path, "lazyhh", k_tilda=3), np.random.SeedSequence(0))


@pytest.mark.parametrize("panels", [("fig4a", "fig4b", "fig4c"), ("fig4d", "fig4e", "fig4f")])
def test_fig4_panels_share_one_sweep(panels):
    """Panels of one sweep must expand to identical trials, so the results store computes them once."""
    keys = ("trials", "fixed", "grid", "zip", "profiles")
    specs = [yaml.safe_load((ROOT / "experiments" / f"{p}.yaml").read_text()) for p in panels]
    assert all({k: s.get(k) for k in keys} == {k: specs[0].get(k) for k in keys} for s in specs)


@pytest.mark.parametrize(("mechanism", "skew", "k", "k_tilde"), [("lazyhh", 1.5, 8, 16), ("cms_heap", 1.3, 8, 16)])
def test_trial_means_over_release_times_equal_fresh_trackers_stopped_there(tmp_path, mechanism, skew, k, k_tilde):
    """The release-time means equal NEW trackers (same seed) fed only each prefix.

    precision_mean_t / recall_mean_t / are_mean_t equal the means, over the output steps at or before the release times,
    of NEW trackers fed only that prefix, each scored on its own prefix.
    """
    params = _params(tmp_path, mechanism, k=k, k_tilde=k_tilde) | {"epsilon": 6.0, "memory_kb": None, "width": 16}
    params["data"] = {"name": "zipf", "_target_": "dpstream.data.zipf_stream", "length": 40_000, "universe": 2000,
                      "skew": skew}
    seed = np.random.SeedSequence(0, spawn_key=(0,))
    row = run_trial(params, seed)
    data_seed, mech_seed = np.random.SeedSequence(0, spawn_key=(0,)).spawn(2)
    stream = load_trace(params["data"], str(tmp_path), data_seed)[0].astype(np.int64)
    period = row["output_period"]
    steps = np.unique(release_times(stream.size) // period * period)
    direct = []
    for s in steps[steps > 0]:
        tracker = make_tracker(params, stream.size, mech_seed)
        tracker.extend(stream[:s])
        direct.append(evaluate_prefix(tracker.estimate(), stream, k))
    precision = [d["precision"] for d in direct if d["n_reported"]]
    recall = [d["recall"] for d in direct if d["n_true"]]
    assert row["n_release_times"] == len(direct) == 16
    assert row["precision_mean_t"] == pytest.approx(np.mean(precision), rel=1e-12)
    assert row["recall_mean_t"] == pytest.approx(np.mean(recall), rel=1e-12)
    assert row["are_mean_t"] == pytest.approx(np.nanmean([d["are"] for d in direct]), rel=1e-12)
    assert {k: row[k] for k in ("precision", "recall", "are")} == pytest.approx(
        {k: direct[-1][k] for k in ("precision", "recall", "are")}, nan_ok=True)
    assert len({(d["precision"], d["recall"]) for d in direct}) > 1  # the steps really differ


def test_trackers_refuse_to_merge_saying_why():
    tracker = LazyHH(k=2, k_tilde=8, epsilon=1.0, delta=1e-3, beta=1e-4, horizon=512, seed=0)
    with pytest.raises(ValueError, match="cannot merge two LazyHH trackers: their reports depend on the order"):
        tracker.merge(tracker)


def test_console_replay_is_the_trials_own_output(tmp_path):
    """The command line lists what the trial reported: the replay uses the trial's data seed, not a fixed one."""
    from dpstream.harness.console import replay_reported
    from dpstream.noise import trial_seed

    params = _params(tmp_path, "cms_heap", k=8, k_tilde=16) | {"memory_kb": None, "width": 16, "trial": 3}
    params["data"] = {"name": "zipf", "_target_": "dpstream.data.zipf_stream", "length": 40_000, "universe": 2000,
                      "skew": 1.3}
    row = run_trial(params, trial_seed(0, 3))
    pairs, time, statement = replay_reported(params)
    data_seed, mech_seed = trial_seed(0, 3).spawn(2)
    tracker = make_tracker(params, 40_000, mech_seed)
    tracker.extend(load_trace(params["data"], str(tmp_path), data_seed)[0])
    assert time == row["output_time"] and len(pairs) == row["n_reported"] > 0
    assert pairs == [(str(item), est) for item, est in tracker.estimate().pairs()]
    assert statement is None  # the CMS heap is not private: it states no guarantee


@pytest.mark.parametrize("pair", sorted(COUNTERS), ids="-".join)
def test_the_noise_tail_scans_exactly_when_its_working_bytes_count_the_scan(pair, monkeypatch):
    """One predicate (``scans_variance``) decides whether the noise tail scans a variance and counts its bytes.

    The tail computes ``largest_variance`` iff it is predicted, and the working bytes LazyHH refuses a horizon by count
    the scan's table iff it runs (the Laplace tree's digit-sum scan was once left out of them).
    """
    counter, node_noise = pair
    scans: list[int] = []
    scan = thresholds_module.largest_variance
    monkeypatch.setattr(thresholds_module, "largest_variance",
                        lambda c, steps: scans.append(steps) or scan(c, steps))
    horizon, k_tilde = 512, 16
    tail = lazy_cms_noise_tail(horizon, k_tilde, 1.0, 1e-3, 3, 1e-3, counter=counter, node_noise=node_noise)
    assert tail > 0.0
    predicted = scans_variance(counter, node_noise)
    assert bool(scans) == predicted, (scans, predicted)
    assert all(s == horizon // k_tilde for s in scans)
    working = noise_tail_working_bytes(horizon, k_tilde, counter, node_noise)
    assert working == (SCAN_BYTES_PER_STEP * (horizon // k_tilde) if predicted else 0)


@pytest.mark.parametrize("make", [
    lambda: LazyHH(k=2, k_tilde=8, epsilon=5.0, delta=0.1, beta=1e-3, horizon=64, seed=1),
    lambda: CMSHeap(k=2, horizon=64, width=16, seed=1),
], ids=["LazyHH", "CMSHeap"])
def test_a_buffer_the_caller_reuses_after_extend_changes_no_state(make):
    def state(reuse: bool) -> bytes:
        tracker, buf = make(), np.full(5, 7, dtype=np.int64)  # less than one refresh period: the items wait
        tracker.extend(buf)
        if reuse:
            buf[:] = 99
        tracker.extend(np.array([1, 2, 3], dtype=np.int64))  # completes the period (k~ = 8): a refresh reads the 8
        return tracker.to_bytes()

    assert state(reuse=True) == state(reuse=False)
