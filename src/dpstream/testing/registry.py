"""The check suite's registry loaded: the shipped specs and the ``check`` of every descriptor."""

from __future__ import annotations

from dpstream import descriptor
from dpstream.testing.spec import MECHANISMS, MechanismSpec, register


def registered() -> dict[str, MechanismSpec]:
    """Every registered mechanism.

    The shipped ones (``dpstream.testing.shipped``) first, then the spec of every descriptor with a ``check``
    (``module:function`` returning its ``MechanismSpec``), then any registered since.
    """
    import dpstream.testing.shipped  # noqa: F401  (registers the shipped mechanisms; imports this package's spec)

    for d in descriptor.load().values():
        if d.check is not None and d.name not in MECHANISMS:
            spec = descriptor.resolve(d.check)()
            if spec.name != d.name:
                raise ValueError(f"{d.check} returned the spec {spec.name!r} for the descriptor {d.name!r}; "
                                 "allowed: a spec of the descriptor's name")
            register(spec)
    return MECHANISMS
