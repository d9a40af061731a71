"""DSR — degree sequence release with the Laplace mechanism — theory of operation.

Alg. 6 of the CADR-LDP spec (``/work/shared/reference/cadr-ldp.md``; Zhang et al., arXiv
2507.10627): after projection, device ``i`` holds a kept degree ``dbar_i`` and releases

    d~_i = clip(dbar_i, 0, theta) + Lap(theta / eps_dsr),   eps_dsr = (1 - alpha) eps.

Clipping comes FIRST, noise second. After clipping, any two inputs (node-LDP neighbours may
differ in every adjacency bit) map into ``[0, theta]``, so the released value has sensitivity
``theta`` and the Laplace mechanism of Dwork et al. ("Calibrating Noise to Sensitivity in
Private Data Analysis", TCC 2006) with scale ``theta / eps_dsr`` is pure ``eps_dsr``-LDP: the
output densities of two inputs differ by at most ``e^eps_dsr`` everywhere. (Clipping after
the noise would instead bias every release and leave the pre-clip value unprotected.) LPEA
already keeps ``dbar_i <= theta``; the clip is the mechanism's own guarantee that does not
depend on the projection being correct. ``d~_i`` is an unbiased estimate of
``min(dbar_i, theta)`` with ``E|d~_i - min(dbar_i, theta)| = theta / eps_dsr``.

The noise is exact (``protocol.samplers.laplace_on_grid``, grid 2**-20): floating-point
``rng.laplace`` leaks its input through the low bits (Mironov, CCS 2012). The clipped degree
is an integer, a grid point, so the discrete Laplace on the grid with scale ``theta /
eps_dsr`` (rounded up to a multiple of 2**-20) keeps the ratio bound ``e^eps_dsr`` exactly;
the moments above hold up to O(2**-40).

``theta`` is public (the θ search reveals only aggregates; see ``collector/theta_search.py``),
and the guarantee above holds for the fixed ``theta`` the collector broadcast.

Post-processing (``post_process_distribution``) rounds and clips the noisy releases and
counts them per degree; it reads only released values, so it costs no extra budget.
Sampling uses an injected ``numpy.random.Generator``; the module is pure.
"""

from __future__ import annotations

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.samplers import GRID, laplace_on_grid
from ldpfleet.protocol.validate import integer_at_least, integer_counts, positive_real, real_array

__all__ = ["dsr_release", "dsr_scale", "post_process_distribution"]


def dsr_scale(theta: int, eps: float) -> float:
    """The Laplace scale ``theta / eps`` (``theta`` an integer >= 1, ``eps > 0``)."""
    return integer_at_least(theta, "theta", 1) / positive_real(eps, "eps")


def dsr_release(
    kept_degree: int | np.ndarray, theta: int, eps: float, rng: np.random.Generator
) -> float | np.ndarray:
    """Release ``clip(kept_degree, 0, theta) + Lap(theta / eps)`` (module docstring).

    ``kept_degree`` is a non-negative integer count (or an integer array: one release per
    entry, exact noise from ``protocol.samplers``). Returns a float for a scalar input, a float
    array of the same shape otherwise."""
    scale = dsr_scale(theta, eps)
    kept = integer_counts(kept_degree, "kept_degree")
    clipped = np.clip(kept, 0, theta).astype(float)  # clip FIRST ...
    return laplace_on_grid(rng, clipped, scale, GRID)  # ... then add the (exact) noise


def post_process_distribution(noisy: np.ndarray, theta: int) -> np.ndarray:
    """Degree histogram over ``0 .. theta`` from noisy releases: round each value to the
    nearest integer (``numpy.rint``: halves go to the even neighbour), clip to
    ``[0, theta]`` (so the mass of releases below 0 lands on 0 and above ``theta`` on
    ``theta``), and count. Returns an ``int64`` array of length ``theta + 1`` whose entries
    sum to ``len(noisy)``; divide by it for the degree distribution. Non-finite releases
    are refused (``ParameterError``)."""
    t = integer_at_least(theta, "theta", 1)
    arr = real_array(noisy, "noisy").reshape(-1)
    bad = ~np.isfinite(arr)
    if np.any(bad):
        idx = int(np.flatnonzero(bad)[0])
        raise ParameterError(
            f"must be finite, got {arr[idx]!r}",
            field=f"noisy[{idx}]",
            limit="finite",
            value=arr[idx],
        )
    degrees = np.clip(np.rint(arr), 0, t).astype(np.int64)
    return np.bincount(degrees, minlength=t + 1)
