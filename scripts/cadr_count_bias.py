"""Issue 20: the bias and spread of the bucket-count estimators on the count below the median.

``python scripts/cadr_count_bias.py [--graphs facebook,ba-1000-m10] [--eps 0.5,0.75]
[--draws 200]``: per graph (``app.cadr_grid.grid_graph`` labels) and ε, the θ search's
grid and exact bucket counts as the dp pipeline builds them (``bucket_grid(n - 1,
bucket_count(n, ε_θ))``), ``--draws`` noise draws of its secure sum (``noise_sum``, seeds
0..draws-1), and per estimator of ``collector.bucket_isotonic`` / the default projection:
the mean and sd of its error on the count of devices below the median's bucket (the
quantity that decides the ε <= 0.75 release), the mass it leaves in truly empty buckets,
and the share of draws whose prior median (``degree_prior``) is not the true median. One
JSON line per graph and ε. Only the θ stage: no DSR release, no post-processing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import numpy as np
from ldpfleet.app.cadr_grid import grid_graph
from ldpfleet.collector.bucket_isotonic import bootstrap_counts, isotonic_counts, tail_counts
from ldpfleet.collector.degree_postprocess import degree_prior, simplex_projection
from ldpfleet.protocol import cadr_theta_noise as tn
from ldpfleet.protocol.cadr_budget import CadrBudget


def _estimators(n: int, eps_theta: float) -> dict:
    parties = tn.noise_parties(n)
    return {
        "old": lambda y: simplex_projection(y, n),
        "iso": lambda y: isotonic_counts(y, n),
        "boot": lambda y: bootstrap_counts(y, n, eps_theta, parties),
        "tail": lambda y: tail_counts(y, n, eps_theta, parties),
        "tailiso": lambda y: tail_counts(y, n, eps_theta, parties, isotonic=True),
    }


def measure(label: str, eps: float, draws: int) -> dict:
    """The figures of one graph and ε (module docstring)."""
    degrees = grid_graph(label).degrees()
    n = len(degrees)
    m = int(np.sort(degrees)[(n - 1) // 2])
    eps_theta = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n).theta
    th = tn.bucket_grid(n - 1, tn.bucket_count(n, eps_theta))
    exact = np.bincount(np.searchsorted(th, degrees, side="left"), minlength=len(th) + 1)
    j = int(np.searchsorted(th, m))  # buckets 0..j-1 lie below the median's bucket
    out = {"graph": label, "eps": eps, "n": n, "median": m, "buckets": len(exact), "below": j}
    errors: dict = {k: [] for k in _estimators(n, eps_theta)}
    empty: dict = {k: [] for k in errors}
    off: dict = {k: [] for k in errors}
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        y = exact + tn.noise_sum(rng, n, tn.noise_parties(n), eps_theta, len(exact))
        for key, estimate in _estimators(n, eps_theta).items():
            counts = estimate(y)
            errors[key].append(float(counts[:j].sum() - exact[:j].sum()))
            empty[key].append(float(counts[exact == 0].sum()))
            prior = degree_prior(counts, th, n - 1, n)
            off[key].append(int(np.searchsorted(np.cumsum(prior), 0.5 - 1e-12)) - m)
    for key in errors:
        e = np.array(errors[key])
        offs, counts = np.unique(off[key], return_counts=True)
        out[key] = {
            "below_error_mean": round(float(e.mean()), 2),
            "below_error_se": round(float(e.std(ddof=1) / np.sqrt(e.size)), 2),
            "below_error_sd": round(float(e.std(ddof=1)), 2),
            "empty_mass": round(float(np.mean(empty[key])), 1),
            "draws_off": int(np.sum(np.array(off[key]) != 0)),
            "offsets": dict(zip(offs.tolist(), counts.tolist(), strict=True)),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--graphs", default="facebook,ba-1000-m10,er-1000-mean40,ws-2000-k6")
    p.add_argument("--eps", default="0.5,0.75")
    p.add_argument("--draws", type=int, default=200)
    a = p.parse_args(argv)
    for label in a.graphs.split(","):
        for eps in (float(e) for e in a.eps.split(",")):
            print(json.dumps(measure(label, eps, a.draws)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
