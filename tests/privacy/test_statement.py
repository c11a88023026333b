"""``certified`` by one rule: ``dpstream.privacy.Certified`` derives it with ``certify`` for every mechanism."""

from __future__ import annotations

import pytest

from dpstream.privacy import Certified, certify
from dpstream.testing import registered

SPECS = registered()


@pytest.mark.parametrize("private, kappa, paper_constants, expected", [
    (True, 1.0, True, True), (False, 1.0, True, False), (True, 0.5, True, False), (True, 1.0, False, False),
])
def test_certified_is_certify_of_private_kappa_and_the_constants(private, kappa, paper_constants, expected) -> None:
    class Toy(Certified):
        pass

    toy = Toy()
    toy.private, toy.kappa, toy.paper_constants = private, kappa, paper_constants
    assert toy.certified is expected is certify(private=private, kappa=kappa, paper_constants=paper_constants)


def test_a_class_that_sets_certified_itself_is_refused() -> None:
    with pytest.raises(TypeError, match="Toy sets certified itself"):
        class Toy(Certified):
            certified = True


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_registered_mechanism_derives_certified_by_the_rule(name: str) -> None:
    mech = SPECS[name].build()
    assert isinstance(mech, Certified), f"{type(mech).__name__} does not derive certified from certify"
    # a private configuration states its privacy exactly when certified; a baseline is never certified
    assert mech.certified is (SPECS[name].privacy is not None and mech.privacy is not None)
