"""False claims of ``detect_period`` over a wide aperiodic family (issue 19, helper F).

Every cell ``KIND/N/EPS0``: ``TRIALS`` streams, SW reports at per-report ``EPS0`` of an
aperiodic stream in [0, 1]; a cell's rate is the share of streams that got a period, with
its one-sided 95 % upper bound (Clopper-Pearson). Trial seeds:
``trial_rng(SEED, "aperiodic-F", trial, "KIND/N/EPS0")`` (not the streams of
``bench_cpr false-claims``, whose purpose string differs).

Kinds: ``ar1_<phi>`` (``bench_cpr``), ``random_walk``, ``white``, ``trend`` (linear),
``quad_trend`` (a parabola with its vertex uniform in the stream, range 0.1-0.9, plus
N(0, 0.05^2)), ``trend_ar1`` (a linear trend 0.1 -> 0.9 plus 0.1 x a unit-variance AR(1),
phi = 0.9), ``ar2_real`` (roots 0.9 and 0.5), ``fracdiff_0.3`` / ``fracdiff_0.45``
(ARFIMA(0, d, 0)), ``ar1_sum`` (a sum of three unit-variance AR(1) with phi 0.5, 0.9, 0.99:
a long-memory-like spectrum), ``level_shifts`` (1-3 random jumps), each clipped or scaled
to [0, 1].

Run: ``python scripts/cpr_false_claims_family.py [--module PERIOD.py] [--jobs J] SEED
TRIALS [CELL ...]`` (no CELL: the whole family x n in 100, 300, 1,000, 3,000, 10,000 x
eps0 in 0.2, 1, 5). One JSON line per cell: kind, n, eps0, trials, claims, upper95,
the (trial, period) of every claim.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys

import numpy as np
from ldpfleet.app.bench_cpr import _normalise01, aperiodic_stream, claims_upper95, trial_rng
from ldpfleet.protocol.sw import SquareWave
from scipy import signal

sys.path.insert(0, __file__.rsplit("/", 1)[0])

KINDS = (
    "ar1_0.5",
    "ar1_0.8",
    "ar1_0.9",
    "ar1_0.95",
    "ar1_0.98",
    "ar1_0.99",
    "random_walk",
    "white",
    "trend",
    "quad_trend",
    "trend_ar1",
    "ar2_real",
    "fracdiff_0.3",
    "fracdiff_0.45",
    "ar1_sum",
    "level_shifts",
)
LENGTHS = (100, 300, 1000, 3000, 10000)
EPS0S = (0.2, 1.0, 5.0)


def _ar1(phi: float, n: int, rng) -> np.ndarray:
    """Unit-variance stationary AR(1) (the first sample drawn from the stationary law)."""
    e = rng.standard_normal(n)
    e[0] /= np.sqrt(1.0 - phi * phi)
    return signal.lfilter([1.0], [1.0, -phi], e) * np.sqrt(1.0 - phi * phi)


def stream(kind: str, n: int, rng) -> np.ndarray:
    if kind == "quad_trend":
        u = np.linspace(0.0, 1.0, n)
        q = (u - rng.uniform(0.0, 1.0)) ** 2
        q = 0.1 + 0.8 * (q - q.min()) / (q.max() - q.min())
        return np.clip(q + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    if kind == "trend_ar1":
        return np.clip(np.linspace(0.1, 0.9, n) + 0.1 * _ar1(0.9, n, rng), 0.0, 1.0)
    if kind == "ar1_sum":
        return _normalise01(sum(_ar1(phi, n, rng) for phi in (0.5, 0.9, 0.99)))
    return aperiodic_stream(kind, n, rng)


def reports(kind: str, n: int, eps0: float, seed: int, trial: int) -> np.ndarray:
    rng = trial_rng(seed, "aperiodic-F", trial, f"{kind}/{n}/{eps0}")
    return SquareWave(eps0).perturb(stream(kind, n, rng), rng)


_DETECT = None


def _init(module_path: str | None) -> None:
    global _DETECT
    if module_path:
        from cpr_period_ab import load_old

        _DETECT = load_old(module_path).detect_period
    else:
        from ldpfleet.collector.period import detect_period

        _DETECT = detect_period


def run_cell(args: tuple) -> dict:
    kind, n, eps0, seed, trials = args
    claims = []
    for trial in range(trials):
        period = _DETECT(reports(kind, n, eps0, seed, trial)).period
        if period is not None:
            claims.append((trial, int(period)))
    k = len(claims)
    upper = claims_upper95(k, trials)
    return {
        "kind": kind,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "claims": k,
        "upper95": upper,
        "claimed": claims,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("seed", type=int)
    parser.add_argument("trials", type=int)
    parser.add_argument("cells", nargs="*")
    a = parser.parse_args()
    if a.cells:
        cells = [(c.split("/")[0], int(c.split("/")[1]), float(c.split("/")[2])) for c in a.cells]
    else:
        cells = [(k, n, e) for n in LENGTHS for k in KINDS for e in EPS0S]
    jobs = [(k, n, e, a.seed, a.trials) for k, n, e in cells]
    with multiprocessing.Pool(a.jobs, initializer=_init, initargs=(a.module,)) as pool:
        for result in pool.imap(run_cell, jobs):
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
