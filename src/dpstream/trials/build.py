"""The one construction path of the trials: a mechanism or a data source is ``hydra.utils.instantiate`` of its config.

A ``conf/mechanism/*.yaml`` or ``conf/data/*.yaml`` holds three kinds of keys:

- declarations the harness reads (``CONFIG_ONLY``: ``name``, ``trial``, ``private``, ``uses``, ``synthetic``, ...)
  and the ``<key>_xxh3`` content hashes of file inputs: never passed;
- keys the trial itself reads (its ``OWN_KEYS``, e.g. ``runs``, ``memory_model``): not passed either;
- every other key is a constructor argument of ``_target_``: ``factory`` turns them into
  ``instantiate(node, _partial_=True)``, a ``functools.partial`` of the target; a key the target does not take is an
  error naming it (a typo must not be dropped silently).

The trial then calls the partial with what is known only at run time (seed, horizon, epsilon, the data):
``call(factory, **runtime)`` passes the runtime arguments the target takes, so one trial serves targets of different
signatures (AboveThreshold has no delta, ThresholdMonitor no cutoff c). The top-level keys a mechanism declares in
``uses`` that are constructor arguments (``CONSTRUCTOR_SHARED``) come from ``shared``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from hydra.utils import instantiate

from dpstream.data.cache import FINGERPRINT_SUFFIX

CONFIG_ONLY = ("name", "trial", "private", "uses", "data_kinds", "data_max", "natural_data", "kind", "synthetic",
               "description")
"""Keys of a mechanism or data config that describe it to the harness; never constructor arguments."""
CONSTRUCTOR_SHARED = ("epsilon", "delta", "width", "depth", "memory_kb")
"""Top-level keys a mechanism may take as constructor arguments (when its ``uses`` lists them)."""


def _accepted(target: Callable[..., Any]) -> set[str] | None:
    """The keyword arguments ``target`` takes (None: it takes any, ``**kwargs``)."""
    parameters = inspect.signature(target).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters}


def constructor_node(config: dict[str, Any], own: Iterable[str] = ()) -> dict[str, Any]:
    """``config`` less its declarations, file hashes and the trial's ``own`` keys: ``_target_`` and its arguments."""
    skip = set(CONFIG_ONLY) | set(own)
    return {k: v for k, v in config.items() if k not in skip and not k.endswith(FINGERPRINT_SUFFIX)}


def factory(config: dict[str, Any], own: Iterable[str] = (), siblings: Iterable[Callable[..., Any]] = ()
            ) -> functools.partial:
    """``instantiate(constructor_node(config, own), _partial_=True)``: the target with its configured arguments.

    A configured key the target does not take is an error naming the allowed keys, unless one of ``siblings`` takes it
    (a key swept for every mechanism of an experiment, e.g. ``mechanism.k_tilde`` of LazyHH beside the CMS baseline):
    then it is left out.
    """
    node = constructor_node(config, own)
    if "_target_" not in node:
        raise ValueError(f"{config.get('name')!r} has no _target_: nothing to build")
    make = instantiate({"_target_": node["_target_"]}, _partial_=True)
    accepted = _accepted(make.func)
    if accepted is not None:
        allowed_elsewhere = {k for s in siblings for k in (_accepted(s) or ())}
        unknown = sorted(k for k in node if k != "_target_" and k not in accepted and k not in allowed_elsewhere)
        if unknown:
            raise ValueError(f"{config.get('name')!r}: {node['_target_']} takes no {', '.join(unknown)}; its "
                             f"arguments: {', '.join(sorted(accepted))}")
        node = {k: v for k, v in node.items() if k == "_target_" or k in accepted}
    return instantiate(node, _partial_=True, _convert_="all")


def call(make: Callable[..., Any], **runtime: Any) -> Any:
    """``make(**runtime)`` with the runtime arguments its target takes (a bound one is not given twice)."""
    accepted = _accepted(make)
    bound = make.keywords if isinstance(make, functools.partial) else {}
    return make(**{k: v for k, v in runtime.items() if (accepted is None or k in accepted) and k not in bound})


def shared(params: dict[str, Any]) -> dict[str, Any]:
    """The top-level constructor keys (``CONSTRUCTOR_SHARED``) the mechanism declares in ``uses``, when set."""
    uses = params["mechanism"].get("uses") or ()
    return {k: params[k] for k in CONSTRUCTOR_SHARED if k in uses and params.get(k) is not None}
