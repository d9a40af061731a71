"""``python -m ldpfleet.app.bench_cadr_noise``: the cost per device of the DP θ search's
exact Pólya share (``protocol.cadr_theta_noise.polya_share``, drawn by
``protocol.samplers.negative_binomial``), as JSON.

For each fleet size ``n`` and budget ε (α = 0.1, the dp pipeline's θ share): the share
one device draws for its answer (``bucket_count(n, ε_θ) + 1`` entries, each the difference
of two ``NB(1/m)`` with ``m = noise_parties(n)``), timed over ``--draws`` devices, and
beside it numpy's floating-point ``Generator.negative_binomial`` for the same shape (what
the shares used before the exact sampler). Seconds are wall time on this machine (noisy
when it is shared); the figures are per device.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.cadr_theta_noise import (
    bucket_count,
    bucket_grid,
    noise_parties,
    polya_share,
    share_ratio,
)

__all__ = ["bench_cadr_noise", "main"]


def _per_call(function, draws: int) -> float:
    started = time.perf_counter()
    for _ in range(draws):
        function()
    return (time.perf_counter() - started) / draws


def bench_cadr_noise(
    sizes: tuple[int, ...] = (4039, 7115),
    eps_list: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 5.0),
    alpha: float = 0.1,
    degree_bound: int = 1045,
    draws: int = 200,
    seed: int = 0,
) -> dict:
    """The JSON-ready figures (module docstring)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        m = noise_parties(n)
        for eps in eps_list:
            eps_theta = CadrBudget.for_pipeline(eps, alpha, "dp", True, n).theta
            size = len(bucket_grid(degree_bound, bucket_count(n, eps_theta))) + 1
            a = float(share_ratio(eps_theta))

            def exact(m=m, eps_theta=eps_theta, size=size):
                return polya_share(rng, m, eps_theta, size)

            def floating(m=m, a=a, size=size):
                return rng.negative_binomial(1 / m, 1 - a, 2 * size)

            rows.append({
                "devices": n, "noise_parties": m, "eps": eps, "eps_theta": eps_theta,
                "entries": size, "ratio": a,
                "exact_ms_per_device": round(1e3 * _per_call(exact, draws), 4),
                "numpy_float_ms_per_device": round(1e3 * _per_call(floating, draws), 4),
            })  # fmt: skip
    return {"bench": "cadr-noise", "alpha": alpha, "draws": draws, "rows": rows}


def main(argv: list[str] | None = None) -> None:
    """Command line: ``--draws`` devices per cell; prints one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="(the output is always JSON)")
    args = parser.parse_args(argv)
    print(json.dumps(bench_cadr_noise(draws=max(1, args.draws))))


if __name__ == "__main__":
    main()
