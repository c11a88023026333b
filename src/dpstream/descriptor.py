"""One descriptor per mechanism configuration, and the registry every table is derived from.

A ``Descriptor`` holds what the rest of dpstream needs to know about a mechanism, under one name: the name of its
config (``conf/mechanism/<name>.yaml``, lowercase, e.g. ``lazycms_discrete_secure``), its label (derived from the name
by ``label``, never typed anywhere else) and line style, the class it builds, how its privacy is read, the sensitivity
probe cases and check-suite entry that test it, its trial runner and accuracy bound (sparse-vector trials), the memory
models that describe it and the code versions of its noise (entries of its results-store key).

The shipped descriptors sit beside their classes, one small module per package (``SHIPPED``: e.g.
``dpstream.sketches.descriptors``). A mechanism outside the package is found in one of two ways:

- an entry point in the group ``dpstream.mechanisms`` (``ENTRY_POINT_GROUP``) whose value is a module that registers
  its descriptors on import (``[project.entry-points."dpstream.mechanisms"] mine = "mypkg.descriptors"``);
- importing that module yourself before the registry is read (``register`` adds to it at any time).

This module imports nothing from the rest of dpstream at import time, so every package can declare its descriptors.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, NamedTuple

ENTRY_POINT_GROUP = "dpstream.mechanisms"
"""The entry-point group naming modules that register descriptors of mechanisms outside dpstream."""

SHIPPED = ("dpstream.sketches.descriptors", "dpstream.counters.descriptors", "dpstream.heavy_hitters.descriptors",
           "dpstream.svt.descriptors", "dpstream.query_release.descriptors")
"""The modules holding the shipped descriptors, in legend order."""

NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*(_UNCERTIFIED)?")
"""A descriptor's name: lowercase words joined by ``_``; ``_UNCERTIFIED`` ends the name of a setting that is not
privacy-certified."""

WORDS: dict[str, str] = {
    # mechanisms: the papers' names (Holland; Kaplan, Mansour, Stemmer; Hsu, Roth, Ullman; the SVT and IC notes)
    "cms": "CMS", "cs": "CS", "punctualcms": "PunctualCMS", "punctualcs": "PunctualCS", "lazycms": "LazyCMS",
    "lazycs": "LazyCS", "lazyhh": "LazyHH", "cms_heap": "CMS + heap", "punctual_hh": "PunctualHH",
    "counter_board": "continual counter (leaderboard cell)",
    "svt_tm": "ThresholdMonitor", "svt_sparse": "Sparse", "svt_above_threshold": "AboveThreshold",
    "svt_hh_tme": "TME", "svt_hh_histogram": "Histogram every step", "svt_hh_sparse_histogram": "Sparse + histogram",
    "svt_theory": "SVT theory", "svt_audit": "SVT audit",
    "svt_audit_power": "SVT audit power (NOT private at ratio > 1)",
    "qr_laplace": "Laplace", "qr_pmw": "PMW", "qr_pmw_online": "Online PMW", "qr_mwem": "MWEM",
    "qr_median": "Median mechanism", "qr_hru": "HRU game (paper's T = nL)", "qr_hru_private": "HRU game (private)",
    "qr_hru_uncapped": "HRU game (uncapped, s = 1)", "qr_alg4": "HRU Alg 4", "qr_alg5": "HRU Alg 5",
    "qr_audit": "HRU game analyst audit",
    # variants: counter, node noise, estimator, hashing
    "ms": "multiply-shift", "analytic": "analytic", "derived": "derived noise", "honaker": "Honaker", "blt": "BLT",
    "trimmed": "trimmed mean", "sqrt": "square root", "discrete_secure": "exact discrete noise (ChaCha20)",
    "ct": "constant time", "smooth": "smooth binary", "laplace": "19-ary Laplace tree (pure DP)",
    "hybrid": "hybrid (no horizon), derived noise", "ahead": "blocks kept", "discrete": "exact discrete Laplace",
    "short": "(cutoff c/2)", "scaled": "scaled", "UNCERTIFIED": "(NOT privacy-certified)",
}
"""The words of labels: a mechanism's name is read as its longest leading entry (the mechanism), then entries for
its variants; ``banded<b>`` reads as "square root in <b> bands". Register words of your own with ``WORDS.update``."""
_BANDED = re.compile(r"banded(\d+)")


def _pieces(name: str) -> list[str]:
    """``name`` cut into ``WORDS`` entries, the longest first at each position."""
    parts, out, i = name.split("_"), [], 0
    while i < len(parts):
        for j in range(len(parts), i, -1):
            piece = "_".join(parts[i:j])
            if piece in WORDS or (j == i + 1 and _BANDED.fullmatch(piece)):
                out.append(piece)
                i = j
                break
        else:
            raise ValueError(f"mechanism name {name!r}: {parts[i]!r} has no label word; allowed: "
                             f"{', '.join(sorted(WORDS))}, banded<b> (add yours to dpstream.descriptor.WORDS)")
    return out


def label(name: str, private: bool = True) -> str:
    """The label of mechanism ``name``: its words joined by ", " (a word in parentheses follows with a space).

    For example ``lazycms_discrete_secure`` -> "LazyCMS, exact discrete noise (ChaCha20)"; ``private=False`` adds
    "(non-private)".
    """
    words = []
    for piece in _pieces(name):
        banded = _BANDED.fullmatch(piece)
        words.append(f"square root in {banded.group(1)} bands" if banded else WORDS[piece])
    if not private:
        words.append("(non-private)")
    text = words[0]
    for word in words[1:]:
        text += (" " if word.startswith("(") else ", ") + word
    return text


class Style(NamedTuple):
    """A mechanism's line style: colour, marker and line style for ``Axes.plot``."""
    color: str
    marker: str
    linestyle: str


def own_privacy(mechanism: Any) -> Any:
    """The mechanism's own statement: its ``privacy`` attribute."""
    return mechanism.privacy


def node_noise_version(mechanism: dict[str, Any]) -> dict[str, str]:
    """Code versions of the node noise of a mechanism config: ``dpstream.counters.node_noise_version``.

    Resolved by path when called, as the shipped descriptor modules are (``SHIPPED``): the counters sit above this
    module in the layers (``docs/harness.md#layers``).
    """
    return resolve("dpstream.counters:node_noise_version")(mechanism)


def resolve(path: str) -> Any:
    """The object at ``module:attribute`` (``attribute`` may be dotted)."""
    module, _, attribute = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Descriptor:
    """One mechanism configuration, everything about it that is not its code or its config.

    - ``name``: its config's name (``conf/mechanism/<name>.yaml``, the ``name:`` key there);
    - ``target``: the class (or function) the config builds, None for configs of a trial that builds no mechanism
      (theory curves, audits);
    - ``style``: its line style in every figure; its label is ``label(name, private)``;
    - ``private``: False for a non-private baseline (its label says so);
    - ``privacy``: how its (eps, delta) statement is read off a built mechanism;
    - ``sensitivity``: ``module:function`` factories of ``dpstream.audit.sensitivity`` cases probing it, registered
      there under the descriptor's name (the shipped cases are written in ``dpstream.audit.sensitivity_cases``);
    - ``check``: ``module:function`` returning its ``dpstream.testing.MechanismSpec`` for ``check_mechanism`` (the
      shipped specs are written in ``dpstream.testing.shipped``);
    - ``runner``, ``theory``: ``module:function`` of ``atoms_trial``'s runner of its class and of its accuracy bound
      (``dpstream.trials.svt``), for sparse-vector mechanisms;
    - ``memory``: the memory models (``sketches.memory.MODELS``) that describe it;
    - ``noise_version(config)``: the code versions of its noise, entries of its results-store key.
    """

    name: str
    target: Any
    style: Style
    private: bool = True
    privacy: Callable[[Any], Any] = own_privacy
    sensitivity: tuple[str, ...] = ()
    check: str | None = None
    runner: str | None = None
    theory: str | None = None
    memory: tuple[str, ...] = ()
    noise_version: Callable[[dict[str, Any]], dict[str, str]] = node_noise_version

    def __post_init__(self) -> None:
        """Refuse a name that is not lowercase words or has a piece without a label word."""
        if not NAME.fullmatch(self.name):
            raise ValueError(f"mechanism name {self.name!r}; allowed: lowercase words joined by '_' "
                             f"(pattern {NAME.pattern})")
        label(self.name)  # every piece has a word

    @property
    def label(self) -> str:
        """Its label in figures, tables and claims."""
        return label(self.name, self.private)


REGISTRY: dict[str, Descriptor] = {}
"""Every registered descriptor by name, in registration order (the legend order)."""
_loaded: list[bool] = []


def register(*descriptors: Descriptor) -> None:
    """Add ``descriptors`` to ``REGISTRY``; a name is registered once."""
    for d in descriptors:
        if REGISTRY.get(d.name, d) != d:
            raise ValueError(f"mechanism {d.name!r} is already registered")
        REGISTRY[d.name] = d


def load() -> dict[str, Descriptor]:
    """Every descriptor: the shipped ones, those of ``ENTRY_POINT_GROUP`` modules, and any registered since."""
    if not _loaded:
        _loaded.append(True)  # set first: a descriptor module may itself ask for the registry while it loads
        modules = [*SHIPPED, *(point.value.partition(":")[0] for point in entry_points(group=ENTRY_POINT_GROUP))]
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as err:
                _loaded.clear()  # a later call tries again rather than answering from a partial registry
                raise ImportError(f"descriptor module {module!r} failed to load: {err}") from err
    return REGISTRY


def descriptor(name: str) -> Descriptor:
    """The descriptor named ``name``; ``ValueError`` naming the registered ones when there is none."""
    found = load().get(name)
    if found is None:
        close = difflib.get_close_matches(name, REGISTRY, n=3)
        raise ValueError(f"mechanism {name!r} has no descriptor; allowed: a registered name"
                         f"{' such as ' + ', '.join(close) if close else ''} (register yours with "
                         f"dpstream.descriptor.register, or an entry point in {ENTRY_POINT_GROUP!r})")
    return found


def noise_version(mechanism: dict[str, Any]) -> dict[str, str]:
    """The noise versions of a mechanism config: its descriptor's (by its ``name``), else ``node_noise_version``."""
    found = load().get(mechanism.get("name", ""))
    return (found.noise_version if found is not None else node_noise_version)(mechanism)


class Labels(dict[str, str]):
    """Name -> label of descriptors: display text only.

    A table of this type is not decision code: a claims rule's hash (``dpstream.claims.registration.rule_hash``)
    skips it, so renaming a label moves no rule hash.
    """


def labels(*names: str) -> Labels:
    """Name -> label of the descriptors ``names``."""
    return Labels({name: descriptor(name).label for name in names})
