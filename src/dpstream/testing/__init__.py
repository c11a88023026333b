"""Checks every mechanism meets, public so a researcher runs them on their own mechanism.

``check_mechanism(spec)`` runs the contract (``check``) over a ``MechanismSpec`` (``spec``); ``register(spec)`` adds a
mechanism to ``MECHANISMS``, the one registry the project's tests run the contract over (``registered()`` loads the
shipped ones, ``dpstream.testing.shipped``, and the ``check`` of every descriptor, ``dpstream.descriptor``).
``sparse_noise`` and ``gauss_bm_noise`` draw the noise of the two families a variant usually builds on (``svt_draws``:
the law, Laplace or discrete Laplace, of one sparse-vector scale).
"""

from dpstream.testing.check import CHECKS, CheckReport, MechanismCheckError, check_mechanism, noise_scale_error
from dpstream.testing.draws import gauss_bm_noise, sparse_noise, svt_audit, svt_draws
from dpstream.testing.registry import registered
from dpstream.testing.spec import MECHANISMS, AuditCase, MechanismSpec, NoiseDraws, register

__all__ = ["CHECKS", "MECHANISMS", "AuditCase", "CheckReport", "MechanismCheckError", "MechanismSpec", "NoiseDraws",
           "check_mechanism", "gauss_bm_noise", "noise_scale_error", "register", "registered", "sparse_noise",
           "svt_audit", "svt_draws"]
