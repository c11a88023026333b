import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
CONF_DIR = ROOT / "conf"

# Worker processes (loky, dask) import trial modules that live beside the tests.
os.environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
sys.path.insert(0, str(TESTS))


@pytest.fixture
def compose_cfg():
    """Compose the real Hydra config with overrides (as `python run.py ...` would)."""
    from hydra import compose, initialize_config_dir

    def _compose(overrides):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)

    return _compose


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory):
    """One results folder shared by every smoke run of the session (the store makes repeats free)."""
    return tmp_path_factory.mktemp("smoke-results")
