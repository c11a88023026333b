"""``check_mechanism``: the contract every mechanism meets, runnable on yours.

Checks, each reported by name: ``arguments`` (keyword-only constructor; a bad epsilon / delta is a ``ValueError``
naming the value), ``privacy`` (the statement: a ``dpstream.privacy.Privacy`` with the configured or accounted budget,
None for what is not private), ``noise`` (drawn noise against its formula), ``sensitivity`` (the probe of
``dpstream.audit.sensitivity`` on random and adversarial neighbours), ``audit`` (a short ``search_audit``),
``reproducibility`` (same seed, same outputs; another seed, other outputs) and ``serialisation`` (``from_bytes`` of
``to_bytes`` keeps every option and the state, where the object has ``to_bytes``).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dpstream.audit.search import search_audit
from dpstream.audit.sensitivity import probe
from dpstream.privacy import Privacy, Relation
from dpstream.testing.spec import MechanismSpec, NoiseDraws

BAD_VALUES = {"epsilon": (-0.5, 0.0, math.inf), "delta": (-1e-3, 1.5)}
STANDARD_ERRORS = 5.0
"""Noise scale tolerance in standard errors of its estimate: a correct mechanism fails with probability ~6e-7."""
SHAPE_P_MIN = 1e-6
"""Smallest goodness-of-fit p-value accepted for the shape of the noise at its stated scale."""
CHI_SQUARE_BINS = 40
"""Bins of about equal mass under a discrete law for its chi-square shape test (about 100 draws each at 4000)."""


class MechanismCheckError(AssertionError):
    """``check_mechanism`` found a breach; the message lists every failed check."""


@dataclass
class CheckReport:
    """What was checked (``passed``), what failed (``failed``: one message each) and what did not apply."""

    name: str
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def __str__(self) -> str:
        """One line per failure, then the passed and skipped checks."""
        lines = [f"{self.name}: {len(self.failed)} failed, passed: {', '.join(self.passed) or 'none'}"]
        lines += [f"  FAILED {m}" for m in self.failed]
        lines += [f"  skipped {k}: {v}" for k, v in self.skipped.items()]
        return "\n".join(lines)


def _arguments(spec: MechanismSpec) -> list[str]:
    errors = []
    if inspect.isclass(spec.factory):
        positional = [p.name for p in inspect.signature(spec.factory).parameters.values()
                      if p.kind is not inspect.Parameter.KEYWORD_ONLY and p.kind is not inspect.Parameter.VAR_KEYWORD]
        if positional:
            errors.append(f"arguments: constructor parameters {positional} are not keyword-only")
    for key, bads in BAD_VALUES.items():
        if key not in spec.config():
            continue
        for bad in bads:
            try:
                spec.factory(**{**spec.config(), key: bad}, seed=0)
            except ValueError as err:
                if repr(bad) not in str(err):
                    errors.append(f"arguments: {key}={bad!r} raised an error that does not name the value: {err}")
            else:
                errors.append(f"arguments: {key}={bad!r} was accepted")
    return errors


def _privacy(spec: MechanismSpec) -> list[str]:
    config = spec.config()
    mech = spec.build()
    statement = getattr(mech, "privacy", "missing")
    if spec.privacy is None:
        return [] if statement is None else [f"privacy: not private, but privacy is {statement!r} (must be None)"]
    if not isinstance(statement, Privacy):
        return [f"privacy: must be a dpstream.privacy.Privacy, got {statement!r}"]
    errors = []
    if not isinstance(statement.relation, Relation):
        errors.append(f"privacy: relation must be a dpstream.privacy.Relation, got {statement.relation!r}")
    # pure is delta = 0 and approximate delta > 0; computational holds at any delta (e.g. (epsilon, 0) from keyed noise)
    if statement.notion != "computational" and (statement.notion == "pure") != (statement.delta == 0):
        errors.append(f"privacy: notion {statement.notion!r} does not fit delta = {statement.delta!r}")
    errors += _budget(spec, statement, mech, config)
    if getattr(mech, "certified", True) is False:
        errors.append("privacy: a statement is made but the mechanism says certified = False")
    return errors


STATED_RTOL = 1e-6
"""How far below the configured epsilon (and delta) a stated one may lie: the noise is calibrated for the configured
budget, and its map gives it back up to the rounding of the noise (the discrete Gaussian's sigma^2 is rounded up to its
grid) and of the arithmetic."""


def _meets(stated: float, configured: float) -> bool:
    """``stated`` at most ``configured`` (up to 4 ulps of float rounding) and within ``STATED_RTOL`` below it."""
    return configured * (1.0 - STATED_RTOL) <= stated <= configured + 4.0 * math.ulp(configured)


def _budget(spec: MechanismSpec, statement: Privacy, mech: Any, config: dict[str, Any]) -> list[str]:
    errors = []
    if spec.privacy == "configured":
        delta = spec.expected_delta(config) if spec.expected_delta else config.get("delta", 0.0)
        epsilon = config["epsilon"]
        if not (_meets(statement.epsilon, epsilon) and _meets(statement.delta, delta)):
            errors.append(f"privacy: states ({statement.epsilon!r}, {statement.delta!r}), configured "
                          f"({epsilon!r}, {delta!r}): the map of its noise must meet the configured budget, "
                          f"within a relative {STATED_RTOL:g}")
    elif spec.accounted is not None:
        eps, delta, eps_analyst = spec.accounted(mech)
        if not math.isclose(statement.epsilon, eps, rel_tol=1e-9) or statement.delta != delta:
            errors.append(f"privacy: states ({statement.epsilon!r}, {statement.delta!r}) but its outputs record "
                          f"({eps!r}, {delta!r})")
        stated = statement.eps_analyst
        if (stated is None) != (eps_analyst is None) or (
                stated is not None and eps_analyst is not None and not math.isclose(stated, eps_analyst, rel_tol=1e-9)):
            errors.append(f"privacy: eps_analyst {statement.eps_analyst!r}, its outputs record {eps_analyst!r}")
    return errors


def discrete_laplace_moments(scale: float) -> tuple[float, float]:
    """E|y| and Var y of the discrete Laplace of scale b, P(y) proportional to exp(-|y| / b) on the integers.

    With q = e^{-1/b} (Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", Sec. 2):
    E|y| = 2q / (1 - q^2) = 1 / sinh(1/b) and Var y = 2q / (1 - q)^2.
    """
    q = math.exp(-1.0 / scale)
    return 1.0 / math.sinh(1.0 / scale), 2.0 * q / math.expm1(-1.0 / scale) ** 2


def _scale_statistic(draws: NoiseDraws, x: np.ndarray) -> tuple[str, float, float, float]:
    """(what, measured, the law's value, relative standard error) of the scale estimate of ``draws.kind``."""
    n = x.size
    if draws.kind == "gaussian":
        return "scale", float(np.sqrt(np.mean(x**2))), draws.scale, 1.0 / math.sqrt(2.0 * n)
    if draws.kind == "discrete_laplace":
        mean_abs, variance = discrete_laplace_moments(draws.scale)
        sd_abs = math.sqrt(variance - mean_abs**2)  # Var |y| = E y^2 - (E|y|)^2, E y = 0
        return "mean |y|", float(np.mean(np.abs(x))), mean_abs, sd_abs / (mean_abs * math.sqrt(n))
    return "scale", float(np.mean(np.abs(x))), draws.scale, 1.0 / math.sqrt(n)


def _shape_p_value(draws: NoiseDraws, x: np.ndarray) -> tuple[str, float]:
    """(test, p-value) of the fit of ``x`` to the stated law.

    Kolmogorov-Smirnov for a continuous law; chi-square over ``CHI_SQUARE_BINS`` bins of about equal mass for the
    discrete Laplace (Kolmogorov-Smirnov does not hold its level on ties: scipy then counts a whole atom against the
    fit).
    """
    if draws.kind == "discrete_laplace":
        law = stats.dlaplace(1.0 / draws.scale)  # pmf tanh(a/2) exp(-a |y|), a = 1/b
        edges = np.unique(law.ppf(np.linspace(0.0, 1.0, CHI_SQUARE_BINS + 1)[1:-1]))  # bin j: (edges[j-1], edges[j]]
        observed = np.bincount(np.searchsorted(edges, x, side="left"), minlength=edges.size + 1)
        expected = np.diff(np.concatenate(([0.0], law.cdf(edges), [1.0]))) * x.size
        return "chi-square", float(stats.chisquare(observed, expected).pvalue)
    dist = stats.laplace(scale=draws.scale) if draws.kind == "laplace" else stats.norm(scale=draws.scale)
    return "Kolmogorov-Smirnov", float(stats.kstest(x, dist.cdf).pvalue)


def noise_scale_error(draws: NoiseDraws) -> str | None:
    """Why ``draws`` do not follow their formula, or None.

    The scale estimate (Laplace: mean |x|, standard error b / sqrt(n); Gaussian: root mean square, standard error
    about sigma / sqrt(2 n); discrete Laplace: mean |y| against ``discrete_laplace_moments``, its standard error from
    the law's variance) must be within ``STANDARD_ERRORS`` standard errors of the formula's, and the goodness-of-fit
    test against the stated distribution (``_shape_p_value``; a discrete law's draws must be integers) must not
    reject at ``SHAPE_P_MIN``.
    """
    x = np.asarray(draws.samples, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    n = x.size
    if n < 100:
        return f"noise: {draws.formula}: only {n} draws (need >= 100)"
    if draws.kind == "discrete_laplace" and not np.array_equal(x, np.round(x)):
        first = float(x[x != np.round(x)][0])
        return f"noise: {draws.formula}: draws of a discrete law must be integers, got {first!r}"
    what, measured, expected, relative_se = _scale_statistic(draws, x)
    ratio = measured / expected
    tolerance = STANDARD_ERRORS * relative_se
    if abs(ratio - 1.0) > tolerance:
        return (f"noise: {draws.formula}: drawn {what} is {ratio:.3f} x the formula's {expected:.6g} (allowed "
                f"1 +- {tolerance:.3f}: {STANDARD_ERRORS:g} standard errors over {n} draws)")
    test, p_value = _shape_p_value(draws, x)
    if p_value < SHAPE_P_MIN:
        return f"noise: {draws.formula}: not {draws.kind}(0, {draws.scale:.6g}) ({test} p = {p_value:.2g})"
    return None


def _noise(spec: MechanismSpec) -> list[str]:
    assert spec.noise is not None
    errors = [noise_scale_error(d) for d in spec.noise(spec.build(seed=1), spec.config())]
    return [e for e in errors if e]


def _sensitivity(spec: MechanismSpec) -> list[str]:
    errors = []
    for factory in spec.sensitivity:
        result = probe(factory(), seed=0)
        if result.exceeds:
            errors.append(f"sensitivity: {result.name}: the neighbours '{result.worst_label}' move the protected "
                          f"values by {result.worst:.6g} ({result.norm}), {result.ratio:.3f} x the "
                          f"{result.assumed:.6g} its noise is calibrated for")
    return errors


def _audit(spec: MechanismSpec) -> list[str]:
    case = spec.audit
    assert case is not None
    result = search_audit(case.sampler, case.data_1, case.data_2, n_runs=case.n_runs,
                          claimed_epsilon=case.claimed_epsilon, delta=case.delta, seed=0)
    if result.epsilon_lower > case.claimed_epsilon:
        return [f"audit: the event {result.event} certifies epsilon >= {result.epsilon_lower:.3f} at 95%, above the "
                f"claimed {case.claimed_epsilon:g}"]
    return []


def _reproducibility(spec: MechanismSpec) -> list[str]:
    first, again = spec.output(spec.build(seed=11)), spec.output(spec.build(seed=11))
    errors = []
    if not np.array_equal(first, again, equal_nan=True):
        errors.append("reproducibility: two runs at seed 11 give different outputs")
    if spec.privacy is not None and np.array_equal(first, spec.output(spec.build(seed=12)), equal_nan=True):
        errors.append("reproducibility: seeds 11 and 12 give the same outputs (is the seed used?)")
    return errors


def _options(obj: Any) -> dict[str, Any]:
    """Public scalar attributes (and dataclass values) of ``obj``: its options as the round trip must keep them."""
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")
            and (isinstance(v, str | int | float | bool | type(None)) or dataclasses.is_dataclass(v))}


def _serialisation(spec: MechanismSpec) -> list[str]:
    mech = spec.build(seed=5)
    spec.output(mech)
    data = mech.to_bytes()
    try:
        back = type(mech).from_bytes(data)
    except (ValueError, TypeError, KeyError) as err:
        return [f"serialisation: {type(mech).__name__}.from_bytes(to_bytes()) failed: {err}"]
    errors = [f"serialisation: from_bytes lost the option {k}: {v!r} came back as {_options(back).get(k)!r}"
              for k, v in _options(mech).items() if _options(back).get(k) != v]
    if not errors and back.to_bytes() != data:
        errors.append("serialisation: to_bytes of the restored object differs from the bytes it was restored from")
    return errors


CHECKS: dict[str, tuple[Callable[[MechanismSpec], bool], Callable[[MechanismSpec], list[str]], str]] = {
    "arguments": (lambda s: True, _arguments, ""),
    "privacy": (lambda s: True, _privacy, ""),
    "noise": (lambda s: s.noise is not None, _noise, "no noise draws in the spec"),
    "sensitivity": (lambda s: bool(s.sensitivity), _sensitivity, "no sensitivity case in the spec"),
    "audit": (lambda s: s.audit is not None, _audit, "no audit case in the spec"),
    "reproducibility": (lambda s: True, _reproducibility, ""),
    "serialisation": (lambda s: hasattr(s.build(), "to_bytes"), _serialisation, "no to_bytes"),
}
"""The checks by name: (applies to a spec, run it and return the failures, why it was skipped otherwise)."""


def check_mechanism(spec: MechanismSpec, *, only: tuple[str, ...] = (), raise_on_failure: bool = True) -> CheckReport:
    """Run every check of ``CHECKS`` that applies to ``spec`` (or those named in ``only``).

    Raises ``MechanismCheckError`` listing every failure (unless ``raise_on_failure`` is False); returns the report.
    """
    unknown = set(only) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown check(s) {sorted(unknown)}; allowed: {', '.join(CHECKS)}")
    report = CheckReport(spec.name)
    started = time.perf_counter()
    for name, (applies, run, why_not) in CHECKS.items():
        if only and name not in only:
            continue
        if not applies(spec):
            report.skipped[name] = spec.notes.get(name, why_not)
            continue
        errors = run(spec)
        report.failed += [f"{spec.name}: {e}" for e in errors]
        if not errors:
            report.passed.append(name)
    report.seconds = time.perf_counter() - started
    if report.failed and raise_on_failure:
        raise MechanismCheckError(str(report))
    return report
