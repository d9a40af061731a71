"""Exploration only (NOT a change, NOT pre-registered): how much would a calibrated
folded-variance route add on short streams (issue 19, claim C2, helper B, 2026-12-06)?

Route: where ``detect_period`` abstains, answer the folded-variance baseline's period if its
scale-free winning score (``B2_calibrated_baselines.baselines``) is above ``q(n)``, the
largest over the eight aperiodic families of ``cpr_short_limit`` AND over eps0 in
{0.2, 1, 5} of the family's ``1 - LEVEL`` quantile (the collector would not need eps0).
``q(n)`` is fitted on seed 55031 (n = 24 and 100 only). Then, on independent seeds:
aperiodic claims of detect_period alone and with the route (seed 55032, per family and
eps0), and exact answers on the held-out cells below a baseline at n = 24 / 100 (fresh
seed 55033).

``aware`` (a 4th argument): ``q(n, eps0)`` fitted per budget instead (the route then needs
the report budget, which ``detect_period`` does not take).

Run: ``nice -n 5 python scripts/B2_fv_route_explore.py NULL FRESH LEVEL [aware]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
from B2_calibrated_baselines import HELD_BELOW, baselines, held_streams
from cpr_short_limit import FAMILIES, null_stream

FIT_SEED, NULL_SEED, FRESH_SEED = 55031, 55032, 55033
EPS0 = (0.2, 1.0, 5.0)


def fit(n: int, trials: int, level: float, budgets=EPS0) -> float:
    worst = -np.inf
    for fi, family in enumerate(FAMILIES):
        for eps0 in budgets:
            s = []
            for trial in range(trials):
                rng = np.random.default_rng([FIT_SEED, fi, n, int(eps0 * 10), trial])
                s.append(
                    baselines(SquareWave(eps0).perturb(null_stream(family, n, rng), rng))["fv"][1]
                )
            worst = max(worst, float(np.quantile(s, 1 - level)))
    return worst


def main(null_trials: int, fresh_trials: int, level: float, aware: bool = False) -> None:
    for n in (24, 100):
        if aware:
            qs = {e: fit(n, null_trials, level, (e,)) for e in EPS0}
        else:
            qs = dict.fromkeys(EPS0, fit(n, null_trials, level))
        print(f"n {n}: q = {qs}", flush=True)
        total = [0, 0, 0]
        for fi, family in enumerate(FAMILIES):
            for eps0 in EPS0:
                alone = union = 0
                for trial in range(null_trials):
                    rng = np.random.default_rng([NULL_SEED, fi, n, int(eps0 * 10), trial])
                    x = SquareWave(eps0).perturb(null_stream(family, n, rng), rng)
                    ours = P.detect_period(x).period is not None
                    alone += ours
                    union += ours or baselines(x)["fv"][1] > qs[eps0]
                total = [total[0] + alone, total[1] + union, total[2] + null_trials]
                print(
                    f"  {family} eps0 {eps0}: claims alone {alone} with route {union}"
                    f" of {null_trials}"
                )
        print(f"n {n} aperiodic totals alone / with route / streams: {total}", flush=True)
        gained = [0, 0, 0, 0]
        for cell in HELD_BELOW:
            if cell[2] != n:
                continue
            hits = {"ours": 0, "route": 0, "fv": 0, "wrong_ours": 0, "wrong_route": 0}
            for x in held_streams(cell, FRESH_SEED, fresh_trials):
                est = P.detect_period(x).period
                (fv, s) = baselines(x)["fv"]
                answer = est if est is not None else (fv if s > qs[cell[3]] else None)
                hits["ours"] += est == cell[1]
                hits["route"] += answer == cell[1]
                hits["fv"] += fv == cell[1]
                hits["wrong_ours"] += est is not None and est != cell[1]
                hits["wrong_route"] += answer is not None and answer != cell[1]
            gained = [
                g + hits[k]
                for g, k in zip(gained, ("ours", "route", "fv", "wrong_route"), strict=True)
            ]
            print(f"  {cell}: {hits}", flush=True)
        print(f"n {n} cells: ours / with route / fv / wrong with route: {gained}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:5] == ["aware"])
