"""Correct user mechanisms that state their ``density``, for the audit tests: named as
``tests.unit.density_mechanisms:Name`` (the audit builds a mechanism by its import path)."""

from __future__ import annotations

import numpy as np
from clipped_laplace import ClippedLaplace


class ClippedLaplaceWithDensity(ClippedLaplace):
    """The example plugin plus the Laplace density (the clip's atoms, at e^-30, ignored):
    the audit then adds the likelihood-ratio witness, which saw the floating-point leak
    of ``x + rng.laplace`` (Mironov, CCS 2012) the example had before it sampled on a grid."""

    def density(self, y, v):
        return self.eps / 2.0 * np.exp(-self.eps * np.abs(np.asarray(y, dtype=float) - v))
