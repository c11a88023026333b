"""One descriptor per mechanism config.

The yamls and the registry agree, and every derived table finds a mechanism that only a descriptor in a package of
its own declares.
"""

import importlib
import sys
import textwrap

import numpy as np
import pytest
from conftest import CONF_DIR
from omegaconf import OmegaConf

from dpstream import descriptor
from dpstream.audit.sensitivity_cases import cases
from dpstream.harness.store import trial_key
from dpstream.plots import names
from dpstream.testing import registered, spec
from dpstream.trials import svt as svt_trials

YAMLS = sorted((CONF_DIR / "mechanism").glob("*.yaml"))


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: p.stem)
def test_every_mechanism_yaml_has_its_descriptor(path):
    config = OmegaConf.to_container(OmegaConf.load(path))
    assert config["name"] == path.stem
    found = descriptor.descriptor(config["name"])
    target = config.get("_target_")
    if target is None:
        assert found.target is None
    else:
        module, _, attribute = target.rpartition(".")
        assert getattr(importlib.import_module(module), attribute) is found.target
    if found.memory:  # the memory model the config sizes its sketch with describes it
        assert config.get("memory_model", "paper") in found.memory


def test_every_shipped_descriptor_has_its_yaml():
    assert set(descriptor.load()) == {p.stem for p in YAMLS}


def test_a_check_suite_spec_named_as_a_descriptor_builds_its_class():
    named = {n: s for n, s in registered().items() if n in descriptor.load()}
    assert {"lazycms", "lazycms_discrete_secure", "punctual_hh", "cms_heap"} <= set(named)
    for name, found in named.items():
        assert found.factory is descriptor.descriptor(name).target, name


def test_labels_are_derived_from_the_name():
    assert descriptor.label("lazycms_discrete_secure") == "LazyCMS, exact discrete noise (ChaCha20)"
    assert descriptor.label("lazycms_banded16") == "LazyCMS, square root in 16 bands"
    assert descriptor.label("cms_ms", private=False) == "CMS, multiply-shift (non-private)"
    assert descriptor.label("qr_alg5_scaled_UNCERTIFIED") == "HRU Alg 5, scaled (NOT privacy-certified)"
    labels = [d.label for d in descriptor.load().values()]
    assert len(set(labels)) == len(labels)
    with pytest.raises(ValueError, match="'nosuchword' has no label word"):
        descriptor.label("lazycms_nosuchword")
    with pytest.raises(ValueError, match="lowercase words"):
        descriptor.Descriptor("LazyCMS_derived", None, descriptor.Style("k", "o", "-"))


TOY = '''
"""A mechanism of one's own: a sparse-vector variant declared by its descriptor only."""
from dpstream.descriptor import WORDS, Descriptor, Style, register
from dpstream.svt import Sparse
from dpstream.testing import MechanismSpec

VERSION = "v1"
WORDS["toymech"] = "Toy mechanism"


class Toy(Sparse):
    """Sparse under another name."""


def run(*args):
    raise NotImplementedError


def alpha(params, design, info):
    return 1.0


def spec():
    return MechanismSpec("toymech", Toy, lambda: {"epsilon": 1.0, "threshold": 5.0, "c": 1}, lambda m: m, None)


def case():
    raise NotImplementedError


register(Descriptor("toymech", Toy, Style("black", "o", "-"), runner=f"{__name__}:run", theory=f"{__name__}:alpha",
                    check=f"{__name__}:spec", sensitivity=(f"{__name__}:case",),
                    noise_version=lambda config: {"toy_noise": VERSION}))
'''


def test_a_mechanism_outside_the_package_is_found_through_its_entry_point(tmp_path, monkeypatch):
    package = tmp_path / "toy_dpstream_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "descriptors.py").write_text(textwrap.dedent(TOY))
    info = tmp_path / "toy_dpstream_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-dpstream-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{descriptor.ENTRY_POINT_GROUP}]\ntoy = toy_dpstream_pkg.descriptors\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(descriptor, "REGISTRY", dict(descriptor.load()))
    monkeypatch.setattr(descriptor, "WORDS", dict(descriptor.WORDS))
    monkeypatch.setattr(descriptor, "_loaded", [])
    try:
        assert "toymech" in descriptor.load()
        toy = sys.modules["toy_dpstream_pkg.descriptors"]
        # plots: label, style, legend order, relabelled text
        assert names.label("toymech") == "Toy mechanism"
        assert names.line_style("toymech")["color"] == "black"
        assert names.ordered(["toymech", "lazycms"]) == ["lazycms", "toymech"]
        assert names.relabel("ran toymech") == "ran Toy mechanism"
        # sparse-vector trials: its runner, and its own bound (not its base class's)
        assert svt_trials.runners()[toy.Toy] is toy.run
        assert svt_trials.bounds()[toy.Toy] is toy.alpha
        assert svt_trials._theory_alpha(toy.Toy, {"mechanism": {}}, None, {}) == 1.0
        # check suite and sensitivity probe
        assert registered()["toymech"].factory is toy.Toy
        assert cases()["toymech"] is toy.case
        # the store keys its trials on its noise version
        params = {"mechanism": {"name": "toymech"}, "seed": 0}
        first = trial_key(params)
        monkeypatch.setattr(toy, "VERSION", "v2")
        assert trial_key(params) != first
    finally:
        spec.MECHANISMS.pop("toymech", None)
        cases().pop("toymech", None)


def test_the_store_key_of_a_shipped_mechanism_holds_its_node_noise_version():
    from dpstream.counters.philox import NODE_NORMAL
    from dpstream.secure.samplers import EXACT_SAMPLER

    assert descriptor.noise_version({"name": "lazycms_derived", "node_noise": "derived"}) == {
        "node_normal": NODE_NORMAL}
    assert descriptor.noise_version({"name": "lazycms_discrete_secure", "node_noise": "discrete_secure"}) == {
        "exact_sampler": EXACT_SAMPLER}
    assert descriptor.noise_version({"name": "lazycms", "node_noise": "stored"}) == {}
    assert np.unique([trial_key({"mechanism": {"name": "lazycms", "node_noise": n}}) for n in
                      ("stored", "derived", "discrete_secure")]).size == 3


def test_a_descriptor_module_that_fails_to_load_is_named_and_the_registry_loads_once_it_is_fixed(monkeypatch):
    shipped = dict(descriptor.load())
    monkeypatch.setattr(descriptor, "REGISTRY", {})
    monkeypatch.setattr(descriptor, "_loaded", [])
    for module in descriptor.SHIPPED:
        monkeypatch.delitem(sys.modules, module)
    real = importlib.import_module

    def broken(name, *args):
        if name == "dpstream.svt.descriptors":
            raise RuntimeError("boom")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ImportError, match="'dpstream.svt.descriptors' failed to load: boom"):
        descriptor.load()
    monkeypatch.setattr(importlib, "import_module", real)
    assert descriptor.load().keys() == shipped.keys()  # not the part loaded before the failure
