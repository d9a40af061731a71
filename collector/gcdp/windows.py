"""The collector's GC-DP window release: ``protocol.gcdp_release``'s machine with
Algorithm 4 injected.

Every decision of the release — window formation (``WindowAssembler``,
``MeansAssembler``), release order, the ledger charge before each noise draw, refusals,
the admission of a partition worker's ``GcdpWindowMeans`` — lives in the sans-I/O module
``protocol.gcdp_release`` (see its theory of operation). This module binds its
``GcdpReleaseMachine`` to the noise of Algorithm 4 (``collector.gcdp.release.
laplace_release``, exact grid Laplace per coordinate) as ``GcdpReleaser``, the name the
collector, the package facade and the tests use, and re-exports the protocol names that
were defined here before.

Randomness only from the injected ``numpy.random.Generator``; time plays no part.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ldpfleet.collector.gcdp.fleet_calibration import FleetTheta
from ldpfleet.collector.gcdp.release import laplace_release
from ldpfleet.protocol.gcdp_release import (
    RELEASE_ACCOUNT,
    RELEASE_KIND,
    RELEASE_MECHANISM,
    GcdpReleaseMachine,
    MeansAssembler,
    ReleaseRefused,
    ReleaseTheta,
    WindowAssembler,
    WindowReleased,
)
from ldpfleet.protocol.ledger import PrivacyLedger

__all__ = [
    "RELEASE_ACCOUNT",
    "RELEASE_KIND",
    "RELEASE_MECHANISM",
    "GcdpReleaser",
    "MeansAssembler",
    "ReleaseRefused",
    "WindowAssembler",
    "WindowReleased",
    "laplace_draw",
]


def laplace_draw(means: np.ndarray, theta: ReleaseTheta, rng: np.random.Generator) -> np.ndarray:
    """One window's release by Algorithm 4 (``laplace_release``) under ``theta``, the
    values in [0, 1] units."""
    return laplace_release(
        means,
        bounds=theta.bounds,
        scales=theta.scales,
        budgets=theta.budgets,
        eps_rel=theta.eps_rel,
        low=0.0,
        high=1.0,
        rng=rng,
    )


class GcdpReleaser(GcdpReleaseMachine):
    """Release every complete window of the fleet with GC-DP, in window order: the
    protocol's ``GcdpReleaseMachine`` drawing its noise with ``laplace_draw``."""

    def __init__(
        self,
        run: str,
        nodes: Sequence[str],
        theta: FleetTheta,
        steps: int,
        ledger: PrivacyLedger,
        rng: np.random.Generator,
        *,
        account: str = RELEASE_ACCOUNT,
        given_means: bool = False,
    ) -> None:
        super().__init__(
            run,
            nodes,
            theta,
            steps,
            ledger,
            rng,
            laplace_draw,
            account=account,
            given_means=given_means,
        )
