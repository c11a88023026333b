import os
import signal
from pathlib import Path

import pytest

from dpstream.registry import CONF_DIR  # the package's config tree (conf/ and experiments/ link into it)

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
__all__ = ["CONF_DIR", "ROOT", "TESTS", "child_env", "ctrl_c_as_at_a_terminal"]


def ctrl_c_as_at_a_terminal() -> None:
    """``preexec_fn`` of a child that a test stops with SIGINT: default SIGINT handling, as in a terminal.

    A command started in the background by a non-interactive shell (``make test &``, a CI runner) inherits SIGINT
    ignored, and Python then never raises ``KeyboardInterrupt``: the run would (rightly) ignore the test's Ctrl-C.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a test's child Python process, with the test helpers (``_harness_fake``) importable.

    Loky and dask workers inherit the parent's ``sys.path``; a plain subprocess does not.
    """
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


@pytest.fixture
def compose_cfg():
    """Compose the real Hydra config with overrides (as `dpstream ...` would)."""
    from hydra import compose, initialize_config_dir

    def _compose(overrides):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)

    return _compose


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory):
    """One results folder shared by every smoke run of the session (the store makes repeats free)."""
    return tmp_path_factory.mktemp("smoke-results")
