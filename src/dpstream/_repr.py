"""``repr`` of every public class from its constructor: ``LazyCMS(width=55, depth=3, epsilon=0.3, ...)``.

The parameters are read from the constructor's signature and their values from the object (an attribute of the same
name, or the dotted path a class maps it to in ``_repr_attrs``). A parameter the object does not keep (``seed``: the
noise seed is never kept) is left out, and so is one equal to its default, as in scikit-learn's ``repr``: what is
shown is what was chosen. Arrays are shown by dtype and shape (``int64[27]``).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np

_MISSING = object()
_PLAIN = (bool, int, float, str, type(None))


_PARAMETERS: dict[type, tuple[inspect.Parameter, ...]] = {}


def _parameters(cls: type) -> tuple[inspect.Parameter, ...]:
    """The named parameters of ``cls``'s constructor, read once per class.

    A constructor that passes ``**kwargs`` on adds the parameters of the next constructor in the method order.
    """
    if cls not in _PARAMETERS:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        found: dict[str, inspect.Parameter] = {}
        for klass in cls.__mro__:
            if "__init__" not in vars(klass) or klass is object:
                continue
            params = list(inspect.signature(vars(klass)["__init__"]).parameters.values())[1:]  # after self
            found.update({p.name: p for p in params if p.kind in kinds and p.name not in found})
            if all(p.kind != inspect.Parameter.VAR_KEYWORD for p in params):
                break
        _PARAMETERS[cls] = tuple(found.values())
    return _PARAMETERS[cls]


def _shown(value: Any) -> str:
    """A short form of a parameter value: numbers and strings as ``repr``, arrays by shape and dtype."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype}[{' x '.join(map(str, value.shape))}]"
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, type):
        return value.__name__
    return repr(value)


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    if default is inspect.Parameter.empty or not isinstance(value, _PLAIN) or not isinstance(default, _PLAIN):
        return False
    return bool(value == default) and isinstance(value, bool) == isinstance(default, bool)


class ParamsRepr:
    """``repr`` as ``Class(name=value, ...)`` over the constructor's parameters the object keeps (module doc).

    ``_repr_attrs`` maps a parameter to the dotted attribute that holds it when the names differ
    (``{"hash_family": "variant.hash_family"}``; a part may be a dict's key).
    """

    _repr_attrs: ClassVar[dict[str, str]] = {}

    def _repr_value(self, name: str) -> Any:
        value: Any = self
        for part in self._repr_attrs.get(name, name).split("."):
            value = value.get(part, _MISSING) if isinstance(value, dict) else getattr(value, part, _MISSING)
            if value is _MISSING:
                break
        return value

    def __repr__(self) -> str:
        """``Class(name=value, ...)``: every kept parameter that differs from its default."""
        shown = []
        for param in _parameters(type(self)):
            value = self._repr_value(param.name)
            if value is _MISSING or param.name == "seed" or _is_default(value, param.default):
                continue
            shown.append(f"{param.name}={_shown(value)}")
        return f"{type(self).__name__}({', '.join(shown)})"
