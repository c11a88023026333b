"""The one error type for bad configuration: it names the key the user typed, its value and what is allowed."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """``key=value`` is not allowed; ``allowed`` says what is (printed by the CLI as ``error: key=value: allowed``)."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        """Name the bad ``key``, its ``value`` and what is ``allowed``."""
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={value}: {allowed}")
